package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// secretsFixture is an API over a real SQLite store and secret service,
// with two tenants and every log line kept.
type secretsFixture struct {
	url        string
	keyA, keyB string
	svc        *secrets.Service
	logs       *bytes.Buffer
	bodies     []string // every answer's body
}

func newSecretsFixture(t *testing.T, maxValue int64) *secretsFixture {
	t.Helper()
	tn := newTenants(t)
	st, keyA, keyB := tn.st, tn.keyA, tn.keyB
	key := make([]byte, secrets.KeySize)
	rand.Read(key)
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := secrets.New(secrets.Config{MaxValueBytes: maxValue}, st, sealer, events.New(st, events.Config{}), log)
	h := New(Config{Secrets: svc, Auth: &auth.Authenticator{Store: st}, Log: log, MaxBodyBytes: 1 << 20})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &secretsFixture{url: srv.URL, keyA: keyA, keyB: keyB, svc: svc, logs: logs}
}

// do sends method path with key and body (a string or a value to encode)
// and returns the status and the answer's body.
func (f *secretsFixture) do(t *testing.T, key, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, f.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	f.bodies = append(f.bodies, string(out))
	return resp.StatusCode, out
}

// want checks an answer's status and, for an error, its code.
func want(t *testing.T, what string, status int, body []byte, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s: status %d, want %d (%s)", what, status, wantStatus, body)
		return
	}
	if wantCode == "" {
		return
	}
	var e api.Error
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != wantCode {
		t.Errorf("%s: body %s, want code %q", what, body, wantCode)
	}
}

func TestSecretRoutes(t *testing.T) {
	f := newSecretsFixture(t, 0)
	const value = "sk-HTTPAPI-CANARY-4f1d2e"
	ctxA := context.Background()

	status, body := f.do(t, f.keyA, "POST", "/v1/secrets", map[string]any{"name": "OPENAI_API_KEY", "description": "gateway", "value": value})
	want(t, "create", status, body, http.StatusCreated, "")
	var created api.Secret
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	if created.Name != "OPENAI_API_KEY" || created.Description != "gateway" || created.ValueBytes != len(value) || created.ID == "" ||
		created.Kind != api.SecretKindEnv || created.Registry != "" ||
		created.CreatedAt.IsZero() || !created.UpdatedAt.Equal(created.CreatedAt) {
		t.Errorf("created = %+v", created)
	}

	status, body = f.do(t, f.keyA, "GET", "/v1/secrets", nil)
	want(t, "list", status, body, http.StatusOK, "")
	var list api.SecretList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]api.Secret{created}, list.Secrets); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	var raw map[string][]map[string]any
	json.Unmarshal(body, &raw)
	for k := range raw["secrets"][0] {
		if k == "value" || strings.Contains(k, "cipher") || k == "nonce" {
			t.Errorf("a listed secret has the field %q", k)
		}
	}

	status, body = f.do(t, f.keyA, "GET", "/v1/secrets/OPENAI_API_KEY", nil)
	want(t, "get", status, body, http.StatusOK, "")
	var got api.Secret
	json.Unmarshal(body, &got)
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}

	status, body = f.do(t, f.keyA, "PUT", "/v1/secrets/OPENAI_API_KEY", map[string]any{"value": value + "-rotated"})
	want(t, "replace", status, body, http.StatusOK, "")
	json.Unmarshal(body, &got)
	if got.ValueBytes != len(value)+8 || got.Description != "gateway" || !got.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("replaced = %+v", got)
	}
	principal := tenancy.With(ctxA, tenancy.Principal{TenantID: created.TenantID, KeyID: "k", Role: api.RoleMember})
	if v, err := f.svc.Reveal(principal, "OPENAI_API_KEY"); err != nil || string(v) != value+"-rotated" {
		t.Errorf("Reveal after PUT: %d bytes, %v", len(v), err)
	}
	status, body = f.do(t, f.keyA, "PUT", "/v1/secrets/OPENAI_API_KEY", map[string]any{"value": value, "description": "new"})
	want(t, "replace with a description", status, body, http.StatusOK, "")
	if json.Unmarshal(body, &got); got.Description != "new" {
		t.Errorf("description after PUT = %q", got.Description)
	}

	// A registry secret names the host it is bound to, kept canonical;
	// a replace keeps it.
	status, body = f.do(t, f.keyA, "POST", "/v1/secrets", map[string]any{"name": "HUB", "kind": "registry", "registry": "Docker.IO", "value": value})
	want(t, "create a registry secret", status, body, http.StatusCreated, "")
	var hub api.Secret
	if json.Unmarshal(body, &hub); hub.Kind != api.SecretKindRegistry || hub.Registry != "index.docker.io" {
		t.Errorf("registry secret = %+v; want kind registry, bound to index.docker.io", hub)
	}
	status, body = f.do(t, f.keyA, "PUT", "/v1/secrets/HUB", map[string]any{"value": value + "-2"})
	if json.Unmarshal(body, &hub); status != http.StatusOK || hub.Kind != api.SecretKindRegistry || hub.Registry != "index.docker.io" {
		t.Errorf("replaced registry secret: %d %+v", status, hub)
	}
	status, body = f.do(t, f.keyA, "PUT", "/v1/secrets/HUB", map[string]any{"value": value, "registry": "evil.example"})
	want(t, "a replace moving a registry secret", status, body, 400, "unknown_field")

	// Failures, each request carrying the value.
	for _, tt := range []struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
	}{
		{"duplicate", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "OPENAI_API_KEY", "value": value}, 409, "secret_exists"},
		{"bad name", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "a/b", "value": value}, 400, "invalid_secret_name"},
		{"name with a space", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "a b", "value": value}, 400, "invalid_secret_name"},
		{"dot name", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "..", "value": value}, 400, "invalid_secret_name"},
		{"empty value", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "E"}, 400, "invalid_secret_value"},
		{"oversized", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "BIG", "value": value + strings.Repeat("x", secrets.DefaultMaxValueBytes)}, 413, "secret_too_large"},
		{"oversized replace", f.keyA, "PUT", "/v1/secrets/OPENAI_API_KEY", map[string]any{"value": value + strings.Repeat("x", secrets.DefaultMaxValueBytes)}, 413, "secret_too_large"},
		{"body over the limit", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "HUGE", "value": value + strings.Repeat("x", 1<<20)}, 413, "body_too_large"},
		{"value not a string", f.keyA, "POST", "/v1/secrets", `{"name":"N","value":["` + value + `"]}`, 400, "invalid_json"},
		{"broken JSON", f.keyA, "POST", "/v1/secrets", `{"name":"N","value":"` + value + `"`, 400, "invalid_json"},
		{"unknown field", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "N", "value": value, "secret": value}, 400, "unknown_field"},
		{"unknown kind", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "N", "kind": "ssh", "value": value}, 400, "invalid_secret_kind"},
		{"registry kind without a host", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "N", "kind": "registry", "value": value}, 400, "invalid_secret_kind"},
		{"a host without the registry kind", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "N", "registry": "ghcr.io", "value": value}, 400, "invalid_secret_kind"},
		{"a registry that is no host", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "N", "kind": "registry", "registry": "ghcr.io " + value, "value": value}, 400, "invalid_secret_registry"},
		{"a registry URL", f.keyA, "POST", "/v1/secrets", map[string]any{"name": "N", "kind": "registry", "registry": "https://ghcr.io/" + value, "value": value}, 400, "invalid_secret_registry"},
		{"replace of a missing secret", f.keyA, "PUT", "/v1/secrets/MISSING", map[string]any{"value": value}, 404, "secret_not_found"},
		{"replace with a bad name", f.keyA, "PUT", "/v1/secrets/-x", map[string]any{"value": value}, 400, "invalid_secret_name"},
		{"no key", "", "POST", "/v1/secrets", map[string]any{"name": "N", "value": value}, 401, ""},
		{"another tenant replaces", f.keyB, "PUT", "/v1/secrets/OPENAI_API_KEY", map[string]any{"value": value}, 404, "secret_not_found"},
		{"another tenant gets", f.keyB, "GET", "/v1/secrets/OPENAI_API_KEY", nil, 404, "secret_not_found"},
		{"another tenant deletes", f.keyB, "DELETE", "/v1/secrets/OPENAI_API_KEY", nil, 404, "secret_not_found"},
		{"get with a bad name", f.keyA, "GET", "/v1/secrets/a%20b", nil, 400, "invalid_secret_name"},
		{"get of a missing secret", f.keyA, "GET", "/v1/secrets/MISSING", nil, 404, "secret_not_found"},
	} {
		status, body := f.do(t, tt.key, tt.method, tt.path, tt.body)
		want(t, tt.name, status, body, tt.status, tt.code)
	}
	status, body = f.do(t, f.keyB, "GET", "/v1/secrets", nil)
	if want(t, "another tenant lists", status, body, 200, ""); strings.Contains(string(body), "OPENAI_API_KEY") {
		t.Errorf("B's list shows A's secret: %s", body)
	}

	status, body = f.do(t, f.keyA, "DELETE", "/v1/secrets/OPENAI_API_KEY", nil)
	want(t, "delete", status, body, http.StatusNoContent, "")
	status, body = f.do(t, f.keyA, "GET", "/v1/secrets/OPENAI_API_KEY", nil)
	want(t, "get after delete", status, body, 404, "secret_not_found")
	status, body = f.do(t, f.keyA, "DELETE", "/v1/secrets/OPENAI_API_KEY", nil)
	want(t, "second delete", status, body, 404, "secret_not_found")

	for _, b := range f.bodies {
		if strings.Contains(b, value) {
			t.Errorf("an answer holds the value: %s", b)
		}
	}
	if strings.Contains(f.logs.String(), value) {
		t.Errorf("the log holds the value:\n%s", f.logs)
	}
	if !strings.Contains(f.logs.String(), `"path":"/v1/secrets"`) {
		t.Errorf("the debug log has no request lines, so the leak check saw nothing:\n%s", f.logs)
	}
}

func TestSecretRoutesWithoutService(t *testing.T) {
	f := newSecretsFixture(t, 0)
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, _, key, err := auth.CreateTenant(tenancy.System(context.Background()), st, "a")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(Config{Auth: &auth.Authenticator{Store: st}, Log: slog.New(slog.DiscardHandler), MaxBodyBytes: 1 << 20}))
	defer srv.Close()
	f.url = srv.URL
	status, body := f.do(t, key, "GET", "/v1/secrets", nil)
	want(t, "list without a secret service", status, body, http.StatusServiceUnavailable, "secrets_unavailable")
}

// TestNoHandlerRevealsSecrets: Service.Reveal and RevealRegistry are for
// in-process users only; no file of this package may call them.
func TestNoHandlerRevealsSecrets(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Reveal") {
				t.Errorf("%s: the API must not call %s", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
