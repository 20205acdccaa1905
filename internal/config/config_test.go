package config

import (
	"strings"
	"testing"
	"time"

	// The store Default names, which Validate looks up.
	_ "github.com/hutchdev/hutch/internal/store/sqlite"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadPrecedence(t *testing.T) {
	c, err := Load([]string{"--listen", "127.0.0.1:9999"}, env(map[string]string{
		"HUTCH_LISTEN": "127.0.0.1:8888", "HUTCH_DATA": "/tmp/x", "HUTCH_DEFAULT_TIMEOUT": "5m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9999" {
		t.Errorf("flag should win over env: listen = %q", c.Listen)
	}
	if c.DataDir != "/tmp/x" || c.DefaultTimeout != 5*time.Minute {
		t.Errorf("env not applied: data %q timeout %s", c.DataDir, c.DefaultTimeout)
	}
	if d := Default(); d.Listen != "127.0.0.1:7070" || d.DataDir != "./hutch-data" {
		t.Errorf("defaults changed: %+v", d)
	}
}

func TestPreviewURL(t *testing.T) {
	c, err := Load([]string{"--preview-domain", "preview.example.com", "--preview-url", "https://preview.example.com:8443"}, env(nil))
	if err != nil || c.PreviewURL != "https://preview.example.com:8443" {
		t.Fatalf("Load = %+v, %v", c.PreviewURL, err)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"bad listen":                  {args: []string{"--listen", "nope"}, want: "listen"},
		"bad driver":                  {args: []string{"--driver", "vmware"}, want: "driver"},
		"unknown store":               {args: []string{"--store", "oracle"}, want: `store "oracle": this build has sqlite`},
		"unknown store from env":      {env: map[string]string{"HUTCH_STORE": "mysql"}, want: `store "mysql"`},
		"bad env duration":            {env: map[string]string{"HUTCH_DEFAULT_TIMEOUT": "soon"}, want: "HUTCH_DEFAULT_TIMEOUT"},
		"timeout over max":            {args: []string{"--default-timeout", "48h"}, want: "default timeout"},
		"negative file max":           {args: []string{"--max-file-bytes", "-1"}, want: "max file bytes"},
		"stray argument":              {args: []string{"extra"}, want: "unexpected"},
		"preview URL of another host": {args: []string{"--preview-url", "https://example.com"}, want: "preview domain"},
		"preview URL with a path":     {args: []string{"--preview-url", "https://localhost/p"}, want: "a port at most"},
		"preview URL not http":        {args: []string{"--preview-url", "ftp://localhost"}, want: "http or https"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(tc.args, env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

// TestStore: the store defaults to sqlite, the environment names another,
// and the flag help lists the registered stores with their summaries.
func TestStore(t *testing.T) {
	c, err := Load(nil, env(nil))
	if err != nil || c.Store != "sqlite" {
		t.Fatalf("Load = %q, %v; want the sqlite store", c.Store, err)
	}
	if _, err := Load(nil, env(map[string]string{"HUTCH_STORE": "sqlite"})); err != nil {
		t.Fatalf("HUTCH_STORE=sqlite: %v", err)
	}
	if u := storeUsage(); !strings.Contains(u, "sqlite (one SQLite file") {
		t.Errorf("--store help %q does not list sqlite", u)
	}
}
