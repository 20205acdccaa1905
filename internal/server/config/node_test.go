package config

import (
	"maps"
	"testing"
)

// TestNodeFlags: --node-label repeats and wins over $HUTCH_NODE_LABELS;
// --advertise wins over $HUTCH_ADVERTISE.
func TestNodeFlags(t *testing.T) {
	c, err := Load(nil, env(map[string]string{"HUTCH_NODE_LABELS": "zone=a,gpu=no", "HUTCH_ADVERTISE": "http://10.0.0.1:7070"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"zone": "a", "gpu": "no"}; !maps.Equal(c.NodeLabels, want) || c.Advertise != "http://10.0.0.1:7070" {
		t.Errorf("from the environment: labels %v, advertise %q", c.NodeLabels, c.Advertise)
	}
	c, err = Load([]string{"--node-label", "zone=b", "--node-label", "ssd=yes", "--advertise", "https://n1.example.com:8443/"},
		env(map[string]string{"HUTCH_NODE_LABELS": "zone=a"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"zone": "b", "ssd": "yes"}; !maps.Equal(c.NodeLabels, want) {
		t.Errorf("flags over the environment: labels %v, want %v", c.NodeLabels, want)
	}
	if u, wild := c.AdvertiseURL("0.0.0.0:8443"); u != "https://n1.example.com:8443" || wild {
		t.Errorf("AdvertiseURL with --advertise = %q, %v", u, wild)
	}
}

// TestAdvertiseURL: without --advertise, the listen address, and whether
// no other machine can use it as it is.
func TestAdvertiseURL(t *testing.T) {
	for addr, wantWild := range map[string]bool{
		"127.0.0.1:7070": true, "0.0.0.0:7070": true, "[::]:7070": true, "localhost:7070": true, ":7070": true,
		"10.1.2.3:7070": false, "node1.internal:7070": false,
	} {
		u, wild := Default().AdvertiseURL(addr)
		if u != "http://"+addr || wild != wantWild {
			t.Errorf("AdvertiseURL(%q) = %q, %v; want http://%s, %v", addr, u, wild, addr, wantWild)
		}
	}
}
