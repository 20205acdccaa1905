package templates_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	secretsvc "github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/store/sqlite"
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

// TestPasswordSecretAttack: a member key names the tenant's provider key
// as a pull's password_secret, with a reference to a registry it runs.
func TestPasswordSecretAttack(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn, _, _, err := auth.CreateTenant(tenancy.System(context.Background()), st, "t")
	if err != nil {
		t.Fatal(err)
	}
	admin := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "a", Role: api.RoleAdmin})
	member := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "m", Role: api.RoleMember})
	sealer, err := secretsvc.NewSealer(make([]byte, secretsvc.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ev := events.New(st, events.Config{})
	sec := secretsvc.New(secretsvc.Config{}, st, sealer, ev, nil)
	const providerKey = "sk-live-PROVIDER-KEY-42"
	if _, err := sec.Create(admin, "OPENAI_API_KEY", "the gateway's", secretsvc.NewValue([]byte(providerKey))); err != nil {
		t.Fatal(err)
	}
	evil := startRecorder(t, `Basic realm="evil"`)
	svc, err := templates.New(templates.Config{Dir: filepath.Join(t.TempDir(), "layers"),
		Registries: templates.RegistryPolicy{Insecure: []string{evil.host()}}}, st, sec, ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Pull(member, api.CreateTemplateRequest{Name: "x", Ref: evil.host() + "/x:1", Username: "u", PasswordSecret: "OPENAI_API_KEY"})
	if evil.leaked(providerKey) {
		t.Fatalf("the provider key reached the caller's registry as a pull's password (pull: %v)", err)
	}
}
