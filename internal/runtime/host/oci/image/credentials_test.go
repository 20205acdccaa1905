package image_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/host/oci/image"
)

// elsewhere is a host that is not the registry's: it records every
// Authorization header it is sent and hands out a token.
type elsewhere struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func startElsewhere(t *testing.T) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Header.Get("Authorization"))
		e.mu.Unlock()
		fmt.Fprint(w, `{"token":"granted"}`)
	}))
	t.Cleanup(e.Close)
	return e
}

// named is e's address by name, which go-containerregistry takes as a
// token realm where it refuses a loopback address.
func (e *elsewhere) named() string {
	return "localhost:" + e.URL[strings.LastIndex(e.URL, ":")+1:]
}

// got reports whether e was sent password, and how many requests it saw.
func (e *elsewhere) got(password string) (bool, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, h := range e.seen {
		if b, ok := strings.CutPrefix(h, "Basic "); ok {
			dec, _ := base64.StdEncoding.DecodeString(b)
			h = string(dec)
		}
		if strings.Contains(h, password) {
			return true, len(e.seen)
		}
	}
	return false, len(e.seen)
}

// TestCredentialsStayWithRegistry: a registry a caller runs tries to have
// the credentials sent to another host: its token realm is there, or it
// redirects there. Neither gets them.
func TestCredentialsStayWithRegistry(t *testing.T) {
	const password = "PROVIDER-KEY-42"
	for _, tc := range []struct {
		name    string
		handler func(other string) http.HandlerFunc
	}{
		{"token realm on another host", func(other string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="evil"`, other))
				w.WriteHeader(http.StatusUnauthorized)
			}
		}},
		{"redirect to another host", func(other string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v2/" && r.Header.Get("Authorization") == "" {
					w.Header().Set("WWW-Authenticate", `Basic realm="evil"`)
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				http.Redirect(w, r, "http://"+other+r.URL.Path, http.StatusTemporaryRedirect)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := startElsewhere(t)
			reg := httptest.NewServer(tc.handler(other.named()))
			t.Cleanup(reg.Close)
			src := image.Source{Ref: strings.TrimPrefix(reg.URL, "http://") + "/x:1", Insecure: true, Username: "u", Password: password}
			_, err := image.Open(context.Background(), src)
			if err == nil {
				t.Fatal("Open succeeded against a registry with no image")
			}
			leaked, n := other.got(password)
			if leaked {
				t.Errorf("the password reached %s (%d requests there; Open: %v)", other.named(), n, err)
			}
			if n == 0 {
				t.Errorf("the registry never sent Open to %s: the test proves nothing (Open: %v)", other.named(), err)
			}
		})
	}
}

// hosts answers as registries and token services on any host, recording
// which host was sent which Authorization header.
type hosts struct {
	realm string // the registries' token realm
	mu    sync.Mutex
	auth  map[string][]string
}

func (h *hosts) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.auth[req.URL.Host] = append(h.auth[req.URL.Host], req.Header.Get("Authorization"))
	h.mu.Unlock()
	rec := httptest.NewRecorder()
	switch {
	case req.URL.Path == "/token":
		fmt.Fprint(rec, `{"token":"granted"}`)
	case !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer "):
		rec.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="s"`, h.realm))
		rec.WriteHeader(http.StatusUnauthorized)
	default:
		rec.WriteHeader(http.StatusNotFound)
	}
	return rec.Result(), nil
}

// TestCredentialsHosts: which hosts are sent the credentials, for a
// reference and the token realm its registry names: its own host and
// port, however the reference spells them, and Docker Hub's token
// service for Docker Hub alone.
func TestCredentialsHosts(t *testing.T) {
	const basic = "Basic dTpwdw==" // u:pw
	for _, tc := range []struct {
		ref, realm string
		sent       map[string]bool // host → sent the credentials
	}{
		{"docker.io/library/x:1", "https://auth.docker.io/token", map[string]bool{"index.docker.io": true, "auth.docker.io": true}},
		{"library/x:1", "https://auth.docker.io/token", map[string]bool{"index.docker.io": true, "auth.docker.io": true}},
		{"ghcr.io/x:1", "https://ghcr.io/token", map[string]bool{"ghcr.io": true}},
		{"ghcr.io:443/x:1", "https://GHCR.io/token", map[string]bool{"ghcr.io:443": true, "GHCR.io": true}},
		{"ghcr.io/x:1", "https://evil.example/token", map[string]bool{"ghcr.io": true, "evil.example": false}},
		{"ghcr.io/x:1", "https://ghcr.io:8443/token", map[string]bool{"ghcr.io": true, "ghcr.io:8443": false}},
		{"registry.example.com/x:1", "https://auth.docker.io/token", map[string]bool{"registry.example.com": true, "auth.docker.io": false}},
	} {
		t.Run(tc.ref+" "+tc.realm, func(t *testing.T) {
			h := &hosts{realm: tc.realm, auth: map[string][]string{}}
			_, err := image.Open(context.Background(), image.Source{Ref: tc.ref, Username: "u", Password: "pw", Transport: h})
			if err == nil {
				t.Fatal("Open found an image no host has")
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			for host, want := range tc.sent {
				seen, ok := h.auth[host]
				if !ok {
					t.Errorf("%s was never asked (asked: %v)", host, h.auth)
					continue
				}
				if got := slices.Contains(seen, basic); got != want {
					t.Errorf("%s sent the credentials: %v, want %v (headers %q)", host, got, want, seen)
				}
			}
		})
	}
}

// TestRegistryHost: the names of a registry host, and what is not one.
func TestRegistryHost(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io":                   "ghcr.io",
		"GHCR.IO":                   "ghcr.io",
		"ghcr.io:443":               "ghcr.io",
		"docker.io":                 "index.docker.io",
		"index.docker.io":           "index.docker.io",
		"registry.example.com:5000": "registry.example.com:5000",
		"127.0.0.1:5000":            "127.0.0.1:5000",
		"[::1]:5000":                "[::1]:5000",
		"":                          "",
		"https://ghcr.io":           "",
		"ghcr.io/team":              "",
		"user@ghcr.io":              "",
		"ghcr.io:":                  "",
		"ghcr.io:http":              "",
		" ghcr.io":                  "",
		"ghcr.io\n":                 "",
	} {
		got, err := image.RegistryHost(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("RegistryHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for ref, want := range map[string]string{
		"debian:bookworm":                                    "index.docker.io",
		"docker.io/library/debian":                           "index.docker.io",
		"ghcr.io:443/team/app:1":                             "ghcr.io",
		"127.0.0.1:5000/x@sha256:" + strings.Repeat("a", 64): "127.0.0.1:5000",
	} {
		if got, err := image.RefRegistry(ref); got != want || err != nil {
			t.Errorf("RefRegistry(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
}
