package router

import (
	"strings"
	"testing"
)

const testID = "01jq3v9x7k2m4n6p8r0s2t4v6w"

func TestParseHost(t *testing.T) {
	for _, tt := range []struct {
		name, host, domain string
		want               Target
		ok                 bool
	}{
		{"good", "3000-" + testID + ".localhost", "localhost", Target{testID, 3000}, true},
		{"with listen port", "3000-" + testID + ".localhost:7070", "localhost", Target{testID, 3000}, true},
		{"port 1", "1-" + testID + ".localhost", "localhost", Target{testID, 1}, true},
		{"port 65535", "65535-" + testID + ".localhost", "localhost", Target{testID, 65535}, true},
		{"uppercase", "3000-" + strings.ToUpper(testID) + ".LocalHost:7070", "localhost", Target{testID, 3000}, true},
		{"longer domain", "8080-" + testID + ".preview.example.com", "preview.example.com", Target{testID, 8080}, true},
		{"port 0", "0-" + testID + ".localhost", "localhost", Target{}, false},
		{"port 65536", "65536-" + testID + ".localhost", "localhost", Target{}, false},
		{"leading zero", "03000-" + testID + ".localhost", "localhost", Target{}, false},
		{"signed port", "+3000-" + testID + ".localhost", "localhost", Target{}, false},
		{"no port", testID + ".localhost", "localhost", Target{}, false},
		{"short id", "3000-" + testID[1:] + ".localhost", "localhost", Target{}, false},
		{"id with a letter outside the alphabet", "3000-" + testID[:25] + "u.localhost", "localhost", Target{}, false},
		{"id too large", "3000-8" + testID[1:] + ".localhost", "localhost", Target{}, false},
		{"other domain", "3000-" + testID + ".example.com", "localhost", Target{}, false},
		{"domain suffix only", "3000-" + testID + ".notlocalhost", "localhost", Target{}, false},
		{"deeper", "x.3000-" + testID + ".localhost", "localhost", Target{}, false},
		{"extra label", "3000-" + testID + ".x.localhost", "localhost", Target{}, false},
		{"trailing dot", "3000-" + testID + ".localhost.", "localhost", Target{}, false},
		{"bad listen port", "3000-" + testID + ".localhost:x", "localhost", Target{}, false},
		{"empty listen port", "3000-" + testID + ".localhost:", "localhost", Target{}, false},
		{"the domain itself", "localhost:7070", "localhost", Target{}, false},
		{"an IP", "127.0.0.1:7070", "localhost", Target{}, false},
		{"empty", "", "localhost", Target{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHost(tt.host, tt.domain)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseHost(%q) = %+v, %v; want %+v, ok %v", tt.host, got, err, tt.want, tt.ok)
			}
			if tt.ok {
				if back, err := ParseHost(got.Host(tt.domain), tt.domain); err != nil || back != got {
					t.Fatalf("round trip of %q: %+v, %v", got.Host(tt.domain), back, err)
				}
			}
		})
	}
}

func FuzzParseHost(f *testing.F) {
	f.Add("3000-" + testID + ".localhost:7070")
	f.Add("0-x.localhost")
	f.Fuzz(func(t *testing.T, host string) {
		got, err := ParseHost(host, "localhost")
		if err != nil {
			return
		}
		if got.Port < 1 || got.Port > 65535 || len(got.SandboxID) != 26 || got.SandboxID != strings.ToLower(got.SandboxID) {
			t.Fatalf("ParseHost(%q) = %+v", host, got)
		}
	})
}
