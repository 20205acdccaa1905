package image_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
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
			if leaked, n := other.got(password); leaked {
				t.Errorf("the password reached %s (%d requests there; Open: %v)", other.named(), n, err)
			}
		})
	}
}
