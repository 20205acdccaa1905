package templates_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/control/templates"
)

// recorder is a registry a caller runs: it records every Authorization
// header it is sent and answers with a challenge.
type recorder struct {
	*httptest.Server
	challenge string
	mu        sync.Mutex
	seen      []string
}

func startRecorder(t *testing.T, challenge string) *recorder {
	t.Helper()
	r := &recorder{challenge: challenge}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Header.Get("Authorization"))
		r.mu.Unlock()
		if req.URL.Path == "/token" {
			fmt.Fprint(w, `{"token":"granted"}`)
			return
		}
		w.Header().Set("WWW-Authenticate", r.challenge)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) host() string { return strings.TrimPrefix(r.URL, "http://") }

// named is r's address by name, which go-containerregistry takes as a
// token realm where it refuses a loopback address.
func (r *recorder) named() string { return "localhost:" + r.URL[strings.LastIndex(r.URL, ":")+1:] }

// requests is how many requests r was sent.
func (r *recorder) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// leaked reports whether any request r saw carried password.
func (r *recorder) leaked(password string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.seen {
		if b, ok := strings.CutPrefix(h, "Basic "); ok {
			dec, _ := base64.StdEncoding.DecodeString(b)
			h = string(dec)
		}
		if strings.Contains(h, password) {
			return true
		}
	}
	return false
}

// TestPasswordSecretAttack: a member key names one of its tenant's
// secrets as a pull's password_secret, with a reference to a registry it
// runs, to read the secret there. An env secret (the provider key the
// gateway keeps out of every sandbox) is refused before anything is
// dialled; a registry secret bound to another host too; and a registry
// secret's own registry cannot pass it on through a token realm on
// another host.
func TestPasswordSecretAttack(t *testing.T) {
	const providerKey = "sk-live-PROVIDER-KEY-42"
	env := secret{secrets.Spec{Name: "OPENAI_API_KEY", Description: "the gateway's"}, providerKey}
	t.Run("an env secret to the caller's registry", func(t *testing.T) {
		evil := startRecorder(t, `Basic realm="evil"`)
		svc, member, _ := newService(t, false, templates.RegistryPolicy{Insecure: []string{evil.host()}}, env)
		_, err := svc.Pull(member, api.CreateTemplateRequest{Name: "x", Ref: evil.host() + "/x:1", Username: "u", PasswordSecret: env.spec.Name})
		if evil.leaked(providerKey) {
			t.Fatalf("the provider key reached the caller's registry as a pull's password (pull: %v)", err)
		}
		wantRefused(t, err, "secret_not_registry")
		if n := evil.requests(); n != 0 {
			t.Errorf("the caller's registry was sent %d requests; want none", n)
		}
	})
	t.Run("a registry secret to another registry", func(t *testing.T) {
		const password = "ghcr-PASSWORD-42"
		ghcr := secret{secrets.Spec{Name: "GHCR", Kind: api.SecretKindRegistry, Registry: "ghcr.io"}, password}
		evil := startRecorder(t, `Basic realm="evil"`)
		svc, member, _ := newService(t, false, templates.RegistryPolicy{Insecure: []string{evil.host()}}, ghcr)
		_, err := svc.Pull(member, api.CreateTemplateRequest{Name: "x", Ref: evil.host() + "/x:1", Username: "u", PasswordSecret: "GHCR"})
		if evil.leaked(password) {
			t.Fatalf("ghcr.io's password reached another registry (pull: %v)", err)
		}
		wantRefused(t, err, "secret_registry_mismatch")
		if n := evil.requests(); n != 0 {
			t.Errorf("the other registry was sent %d requests; want none", n)
		}
	})
	t.Run("a registry secret to a token realm on another host", func(t *testing.T) {
		const password = "registry-PASSWORD-42"
		realm := startRecorder(t, `Basic realm="evil"`)
		bound := startRecorder(t, fmt.Sprintf(`Bearer realm="http://%s/token",service="evil"`, realm.named()))
		sec := secret{secrets.Spec{Name: "REG", Kind: api.SecretKindRegistry, Registry: bound.host()}, password}
		svc, member, _ := newService(t, false, templates.RegistryPolicy{Insecure: []string{bound.host(), realm.named()}}, sec)
		_, err := svc.Pull(member, api.CreateTemplateRequest{Name: "x", Ref: bound.host() + "/x:1", Username: "u", PasswordSecret: "REG"})
		if err == nil {
			t.Fatal("Pull succeeded from a registry with no image")
		}
		if realm.leaked(password) {
			t.Errorf("the password reached the token realm on %s (pull: %v)", realm.named(), err)
		}
		if realm.requests() == 0 {
			t.Errorf("the pull never reached the token realm: the test proves nothing (pull: %v)", err)
		}
	})
}

// wantRefused fails t unless err is a 4xx of code.
func wantRefused(t *testing.T, err error, code string) {
	t.Helper()
	if status, _, _ := errdefs.HTTPStatus(err); !errdefs.HasCode(err, code) || status < 400 || status > 499 {
		t.Errorf("Pull = %v (status %d); want a 4xx of code %s", err, status, code)
	}
}
