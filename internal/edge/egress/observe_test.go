package egress

import (
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
)

// observer passes on what it is told.
type observer chan observed

type observed struct {
	verdict string
	out, in int64
}

func (o observer) ObserveEgress(verdict string, out, in int64) { o <- observed{verdict, out, in} }

// TestObserver: the Observer hears each connection's verdict once, and
// the bytes of the allowed ones.
func TestObserver(t *testing.T) {
	obs := make(observer, 1)
	cfg := &Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Observer: obs}
	f := newFixture(t, cfg, api.NetworkPolicy{Egress: "allowlist", Allow: []string{"127.0.0.0/8"}})

	if code, body := f.get(t, "http://"+port(f.target)+"/ok", false); code != 200 {
		t.Fatalf("allowed: %d %q", code, body)
	}
	if o := <-obs; o.verdict != VerdictAllowed || o.out == 0 || o.in == 0 {
		t.Errorf("an allowed request observed %+v; want allowed with bytes both ways", o)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if code, _ := f.get(t, "http://"+closed+"/", false); code != http.StatusBadGateway {
		t.Fatalf("a closed port: %d, want 502", code)
	}
	if o := <-obs; o != (observed{VerdictFailed, 0, 0}) {
		t.Errorf("a connection that failed observed %+v; want failed", o)
	}

	pol, _ := netpolicy.Parse(api.NetworkPolicy{Egress: "none"})
	f.sb.SetPolicy(pol)
	if code, _ := f.get(t, "http://"+port(f.target)+"/", true); code == 200 {
		t.Fatal("none let a tunnel through")
	}
	if o := <-obs; o != (observed{VerdictDenied, 0, 0}) {
		t.Errorf("a refused tunnel observed %+v; want denied", o)
	}
	select {
	case o := <-obs:
		t.Errorf("observed %+v more than the three connections", o)
	default:
	}
}
