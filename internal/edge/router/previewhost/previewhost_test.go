package previewhost

import (
	"strings"
	"testing"
)

func TestValidDomain(t *testing.T) {
	for _, d := range []string{"localhost", "preview.example.com", "Preview.Example.COM", "a-b.c0"} {
		if err := ValidDomain(d); err != nil {
			t.Errorf("ValidDomain(%q): %v", d, err)
		}
	}
	for _, d := range []string{"", ".localhost", "localhost.", "a..b", "-a.b", "a-.b", "a_b.c", "localhost:7070", "*.example.com",
		strings.Repeat("a", 64) + ".com", strings.Repeat("abcdefghi.", 22) + "com"} {
		if err := ValidDomain(d); err == nil {
			t.Errorf("ValidDomain(%q) accepted it", d)
		}
	}
}

func TestParsePublicURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://localhost":      "https://localhost",
		"https://LOCALHOST:8443": "https://LOCALHOST:8443",
		"http://localhost:8080/": "http://localhost:8080/",
	} {
		u, err := ParsePublicURL(raw, "localhost")
		if err != nil || u.String() != want {
			t.Errorf("ParsePublicURL(%q) = %v, %v; want %s", raw, u, err, want)
		}
	}
	for _, raw := range []string{"https://example.com", "https://localhost/x", "https://u@localhost", "ws://localhost", "localhost"} {
		if _, err := ParsePublicURL(raw, "localhost"); err == nil {
			t.Errorf("ParsePublicURL(%q) took it", raw)
		}
	}
}
