package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/router"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// previewFixture is the API behind the router over a real store and the
// sandbox service, with a backend standing in for every sandbox's port.
type previewFixture struct {
	srv        *httptest.Server
	keyA, keyB string
	sbA        string
}

func newPreviewFixture(t *testing.T) *previewFixture {
	t.Helper()
	tn := newAPIFixture(t)
	st := tn.st
	sys := tenancy.System(context.Background())
	f := &previewFixture{keyA: tn.keyA, keyB: tn.keyB}
	sb := &store.Sandbox{TenantID: tn.a, State: api.StateRunning, Template: "host", Driver: "fake"}
	if err := st.CreateSandbox(sys, sb); err != nil {
		t.Fatal(err)
	}
	f.sbA = sb.ID
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the app") }))
	t.Cleanup(app.Close)
	authn := &auth.Authenticator{Store: st}
	rt, err := router.New(router.Config{
		Domain:    "localhost",
		Key:       bytes.Repeat([]byte{9}, router.KeyBytes),
		Sandboxes: tn.svc,
		Auth:      authn,
		Tunnels: router.DialFunc(func(ctx context.Context, _ string, _ int) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", app.Listener.Addr().String())
		}),
		Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	h := New(Config{Sandboxes: tn.svc, Previews: rt, Auth: authn, Log: slog.New(slog.DiscardHandler), MaxBodyBytes: 1 << 20})
	f.srv = httptest.NewServer(rt.Wrap(h))
	t.Cleanup(f.srv.Close)
	return f
}

// call sends a request to the API (or, with host set, to that host) and
// decodes a JSON answer into out.
func (f *previewFixture) call(t *testing.T, method, path, host, key, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if s, ok := out.(*string); ok {
			*s = string(b)
		} else if resp.StatusCode < 300 {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v in %s", method, path, err, b)
			}
		} else {
			json.Unmarshal(b, out)
		}
	}
	return resp.StatusCode
}

func TestPreviewRoutes(t *testing.T) {
	f := newPreviewFixture(t)
	_, listen, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	ports := "/v1/sandboxes/" + f.sbA + "/ports"
	previewHost := "3000-" + f.sbA + ".localhost:" + listen

	var pu api.PreviewURL
	if st := f.call(t, "POST", ports+"/3000/url", "", f.keyA, "", &pu); st != 200 {
		t.Fatalf("sign: %d", st)
	}
	u, err := url.Parse(pu.URL)
	if err != nil || u.Host != previewHost || u.Query().Get(router.TokenParam) == "" {
		t.Fatalf("signed URL %q", pu.URL)
	}
	if d := time.Until(pu.ExpiresAt); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("expires in %s", d)
	}
	var body string
	if st := f.call(t, "GET", "/?"+u.RawQuery, previewHost, "", "", &body); st != 200 || body != "the app" {
		t.Fatalf("through the signed URL: %d %q", st, body)
	}
	if st := f.call(t, "GET", "/", previewHost, "", "", &body); st != 401 {
		t.Fatalf("private preview without credentials: %d", st)
	}
	if st := f.call(t, "GET", "/", previewHost, f.keyA, "", &body); st != 200 {
		t.Fatalf("private preview with the tenant's key: %d", st)
	}
	if st := f.call(t, "GET", "/", previewHost, f.keyB, "", &body); st != 404 {
		t.Fatalf("private preview with another tenant's key: %d", st)
	}
	if st := f.call(t, "POST", ports+"/3000/url", "", f.keyA, `{"expires_in_s": 60}`, &pu); st != 200 || time.Until(pu.ExpiresAt) > time.Minute {
		t.Fatalf("sign for a minute: %d, %+v", st, pu)
	}

	var p api.Port
	if st := f.call(t, "PUT", ports+"/3000", "", f.keyA, `{"public": true}`, &p); st != 200 || !p.Public || p.Port != 3000 ||
		p.URL != "http://"+previewHost+"/" || p.UpdatedAt.IsZero() {
		t.Fatalf("make public: %d %+v", st, p)
	}
	if st := f.call(t, "GET", "/", previewHost, "", "", &body); st != 200 {
		t.Fatalf("public preview without credentials: %d", st)
	}
	f.call(t, "PUT", ports+"/8080", "", f.keyA, `{"public": false}`, nil)
	var l api.PortList
	if st := f.call(t, "GET", ports, "", f.keyA, "", &l); st != 200 || len(l.Ports) != 2 || l.Ports[0].Port != 3000 || !l.Ports[0].Public ||
		l.Ports[1].Port != 8080 || l.Ports[1].Public {
		t.Fatalf("list: %d %+v", st, l)
	}
	if st := f.call(t, "PUT", ports+"/3000", "", f.keyA, `{"public": false}`, &p); st != 200 || p.Public {
		t.Fatalf("make private: %d %+v", st, p)
	}
	if st := f.call(t, "GET", "/", previewHost, "", "", &body); st != 401 {
		t.Fatalf("private again: %d", st)
	}

	for _, tt := range []struct {
		name, method, path, key, body string
		status                        int
		code                          string
	}{
		{"another tenant signs", "POST", ports + "/3000/url", f.keyB, "", 404, "sandbox_not_found"},
		{"another tenant sets", "PUT", ports + "/3000", f.keyB, `{"public": true}`, 404, "sandbox_not_found"},
		{"another tenant lists", "GET", ports, f.keyB, "", 404, "sandbox_not_found"},
		{"no key", "POST", ports + "/3000/url", "", "", 401, ""},
		{"port 0", "POST", ports + "/0/url", f.keyA, "", 400, "invalid_port"},
		{"port 65536", "PUT", ports + "/65536", f.keyA, `{"public": true}`, 400, "invalid_port"},
		{"port with a zero", "PUT", ports + "/03000", f.keyA, `{"public": true}`, 400, "invalid_port"},
		{"too long", "POST", ports + "/3000/url", f.keyA, `{"expires_in_s": 86401}`, 400, "invalid_expiry"},
		{"negative", "POST", ports + "/3000/url", f.keyA, `{"expires_in_s": -1}`, 400, "invalid_expiry"},
		{"no public", "PUT", ports + "/3000", f.keyA, `{}`, 400, "invalid_request"},
		{"unknown field", "PUT", ports + "/3000", f.keyA, `{"public": true, "x": 1}`, 400, "unknown_field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e api.Error
			if st := f.call(t, tt.method, tt.path, "", tt.key, tt.body, &e); st != tt.status || (tt.code != "" && e.Error.Code != tt.code) {
				t.Fatalf("%d %+v, want %d %s", st, e, tt.status, tt.code)
			}
		})
	}
}

// TestPreviewRoutesWithoutRouter: an API no router wraps says so.
func TestPreviewRoutesWithoutRouter(t *testing.T) {
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
	req, _ := http.NewRequest("POST", srv.URL+"/v1/sandboxes/01jq3v9x7k2m4n6p8r0s2t4v6w/ports/3000/url", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestListPortsListening: the port list over the sandbox service. The
// fake driver's agents run in the test's network namespace, the host's,
// so they refuse to list its sockets: the settings still come, without
// listening state, and listening_error says why; so for a stopped
// sandbox.
func TestListPortsListening(t *testing.T) {
	f := newAPIFixture(t)
	rt, err := router.New(router.Config{
		Domain: "localhost", Key: bytes.Repeat([]byte{9}, router.KeyBytes), Sandboxes: f.svc,
		Auth: &auth.Authenticator{Store: f.st}, Tunnels: f.svc, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	srv := httptest.NewServer(rt.Wrap(New(Config{Sandboxes: f.svc, Previews: rt, Auth: &auth.Authenticator{Store: f.st},
		Log: slog.New(slog.DiscardHandler), MaxBodyBytes: 1 << 20})))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, f.keyA)
	sb := f.sandbox(t)
	if _, err := c.SetPortPublic(f.ctx, sb.ID, 3000, true); err != nil {
		t.Fatal(err)
	}

	l, err := c.ListPorts(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Ports) != 1 || !l.Ports[0].Configured || l.Ports[0].Listening != nil || l.Ports[0].Addresses != nil ||
		l.ListeningError == nil || l.ListeningError.Code != "previews_unsupported" {
		t.Fatalf("running, on the host's network: %+v, %+v", l.Ports, l.ListeningError)
	}

	if _, err := c.StopSandbox(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	l, err = c.ListPorts(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Ports) != 1 || l.Ports[0].Listening != nil || l.ListeningError == nil || l.ListeningError.Code != "sandbox_not_running" {
		t.Fatalf("stopped: %+v, %+v", l.Ports, l.ListeningError)
	}
}

// TestWithListening: settings and listening sockets become one list in
// port order; a port with a setting and nothing listening says so, one
// listening without a setting is added.
func TestWithListening(t *testing.T) {
	f := newAPIFixture(t)
	rt, err := router.New(router.Config{Domain: "localhost", Key: bytes.Repeat([]byte{9}, router.KeyBytes), Sandboxes: f.svc, Auth: &auth.Authenticator{Store: f.st},
		Tunnels: router.DialFunc(func(context.Context, string, int) (net.Conn, error) { return nil, nil }), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	r := httptest.NewRequest("GET", "http://localhost:8080/v1/sandboxes/sb/ports", nil)
	at := func(port int) string { return rt.URL(r, router.Target{SandboxID: "sb", Port: port}) }
	when := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	settings := []api.Port{
		{Port: 3000, Public: true, URL: at(3000), Configured: true, UpdatedAt: when},
		{Port: 8080, URL: at(8080), Configured: true, UpdatedAt: when},
	}
	got := withListening(rt, r, "sb", settings, []sandbox.Listener{
		{Port: 3000, Addresses: []string{"::1"}},
		{Port: 5173, Addresses: []string{"127.0.0.1", "::1"}},
	})
	want := []api.Port{
		{Port: 3000, Public: true, URL: at(3000), Configured: true, UpdatedAt: when, Listening: new(true), Addresses: []string{"::1"}},
		{Port: 5173, URL: at(5173), Listening: new(true), Addresses: []string{"127.0.0.1", "::1"}},
		{Port: 8080, URL: at(8080), Configured: true, UpdatedAt: when, Listening: new(false)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	b, err := json.Marshal(got[1])
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "updated_at") || !strings.Contains(s, `"configured":false`) || !strings.Contains(s, `"listening":true`) {
		t.Fatalf("a port listening without a setting: %s", s)
	}
	if b, _ := json.Marshal(api.Port{Port: 8080, URL: at(8080), Configured: true, UpdatedAt: when}); strings.Contains(string(b), "listening") || strings.Contains(string(b), "addresses") {
		t.Fatalf("a setting without listening state: %s", b)
	}
}
