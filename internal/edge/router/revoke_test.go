package router

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// TestRouterKeyRevoked: a private preview's WebSocket that an API key let
// in ends when the key is revoked; one another key let in goes on.
func TestRouterKeyRevoked(t *testing.T) {
	e := newEnv(t)
	addr := e.srv.Listener.Addr().String()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		},
	}}
	_, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(key string) *websocket.Conn {
		t.Helper()
		c, _, err := websocket.Dial(ctx, "ws://"+host(idRunning, appPort)+":"+port+"/ws", &websocket.DialOptions{HTTPClient: hc,
			HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	echo := func(c *websocket.Conn) error {
		if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
			return err
		}
		_, _, err := c.Read(ctx)
		return err
	}
	revoked, kept := dial(keyA), dial(keyA2)
	for _, c := range []*websocket.Conn{revoked, kept} {
		if err := echo(c); err != nil {
			t.Fatalf("echo before the revocation: %v", err)
		}
	}

	e.sessions.revoke("aaaa")
	wantRevokedWebSocketEnds(t, ctx, revoked)
	if err := echo(kept); err != nil {
		t.Errorf("another key's WebSocket after the revocation: %v", err)
	}
}

// countingStore is the real store, counting the key lookups made through
// it.
type countingStore struct {
	store.Store
	mu      sync.Mutex
	lookups int
}

func (s *countingStore) LookupKey(ctx context.Context, id string) (store.Key, error) {
	s.mu.Lock()
	s.lookups++
	s.mu.Unlock()
	return s.Store.LookupKey(ctx, id)
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// previews is the sandbox service over st, which resolves previews from
// it as in hutch serve; nothing here calls its driver, a fake.
func previews(t testing.TB, st store.Store) *sandbox.Service {
	t.Helper()
	svc, err := sandbox.New(sandbox.Config{Store: st, Drivers: driver.Single(fake.New(fake.Config{Dir: t.TempDir()})),
		Events: events.New(st, events.Config{}), Log: slog.New(slog.DiscardHandler),
		Settings:     api.Settings{DefaultTimeoutS: 3600, MaxTimeoutS: 3600, OnExpiry: api.OnExpiryDestroy, OnIdle: api.OnExpiryPause},
		MaxFileBytes: 1 << 20, MaxOutputBytes: 1 << 20, TeardownTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return svc
}

// TestRouterRevokeWithAuthenticator: with the server's own Authenticator
// and a SQLite store, a key is looked up once for many requests, and
// revoking it (as DELETE /v1/keys/{id} does) refuses its next request and
// ends its WebSocket at once.
func TestRouterRevokeWithAuthenticator(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{Store: st}
	sys := tenancy.System(context.Background())
	tn := store.Tenant{ID: ids.New(), Name: "t"}
	k, full := auth.NewKey(tn.ID, "test", api.RoleMember)
	if err := st.CreateTenant(sys, tn, k); err != nil {
		t.Fatal(err)
	}
	owner := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: k.ID, Role: k.Role})
	sb := &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "namespace"}
	if err := st.CreateSandbox(owner, sb); err != nil {
		t.Fatal(err)
	}
	app := httptest.NewServer(testApp())
	t.Cleanup(app.Close)
	authn := &auth.Authenticator{Store: cs}
	rt, err := New(Config{
		Domain:    "localhost",
		Key:       bytes.Repeat([]byte{1}, KeyBytes),
		Sandboxes: previews(t, st),
		Auth:      authn,
		Tunnels: DialFunc(func(ctx context.Context, id string, port int) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", app.Listener.Addr().String())
		}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	srv := httptest.NewServer(rt.Wrap(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	previewHost := Target{SandboxID: sb.ID, Port: appPort}.Host("localhost") + ":" + port
	get := func() int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/headers", nil)
		req.Host = previewHost
		req.Header.Set("Authorization", "Bearer "+full)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 5 {
		if status := get(); status != 200 {
			t.Fatalf("status %d", status)
		}
	}
	if n := cs.count(); n != 1 {
		t.Fatalf("five requests looked the key up %d times, want 1", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+previewHost+"/ws", &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", srv.Listener.Addr().String())
		}}},
		HTTPHeader: http.Header{"Authorization": {"Bearer " + full}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, err := authn.Revoke(owner, k.ID, false); err != nil {
		t.Fatal(err)
	}
	if status := get(); status != 401 {
		t.Fatalf("the revoked key's next request: %d, want 401", status)
	}
	wantRevokedWebSocketEnds(t, ctx, ws)
}

// wantRevokedWebSocketEnds fails t unless ws, whose key was revoked, ends
// without another message.
func wantRevokedWebSocketEnds(t *testing.T, ctx context.Context, ws *websocket.Conn) {
	t.Helper()
	ended := make(chan error, 1)
	go func() {
		_, _, err := ws.Read(ctx)
		ended <- err
	}()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the revoked key's WebSocket read a message")
		}
	case <-time.After(10 * time.Second): // a hang detector: it ends at once
		t.Fatal("the revoked key's WebSocket outlived its revocation")
	}
}

// TestRouterSignedURLKeyRevoked: a signed URL, and the cookie it leaves,
// act as the key that minted them: a browser's requests check the key once
// for many, and once it is revoked the URL and the cookie are refused and
// a WebSocket the cookie opened ends; what another key minted goes on.
func TestRouterSignedURLKeyRevoked(t *testing.T) {
	e := newEnv(t)
	apiReq := httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/x", nil)
	token := func(keyID string) string {
		t.Helper()
		u, _, err := e.rt.SignedURL(apiReq, Target{idRunning, appPort}, keyID, 0)
		if err != nil {
			t.Fatal(err)
		}
		pu, _ := url.Parse(u)
		return pu.Query().Get(TokenParam)
	}
	doomed, kept := token("aaaa"), token("aaa2")
	resp, body := e.get(idRunning, appPort, "/headers?"+TokenParam+"="+doomed, nil)
	wantStatus(t, "the signed URL", resp, body, 200, "")
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			cookie = c.Value
		}
	}
	own := "http://" + e.hostHeader(idRunning, appPort)
	fromPage := map[string]string{"Cookie": CookieName + "=" + cookie, "Referer": own + "/"}
	_, checks0 := e.sessions.held("aaaa")
	for range 5 {
		resp, body = e.get(idRunning, appPort, "/headers", fromPage)
		wantStatus(t, "the cookie", resp, body, 200, "")
	}
	if _, checks := e.sessions.held("aaaa"); checks != checks0 {
		t.Errorf("five requests with the cookie checked the key %d times; want it granted once (by the signed URL)", checks-checks0)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+e.srv.Listener.Addr().String()+"/ws", &websocket.DialOptions{Host: e.hostHeader(idRunning, appPort),
		HTTPHeader: http.Header{"Cookie": {CookieName + "=" + cookie}, "Origin": {own}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := ws.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Read(ctx); err != nil {
		t.Fatal(err)
	}

	e.sessions.revoke("aaaa")
	wantRevokedWebSocketEnds(t, ctx, ws)
	resp, body = e.get(idRunning, appPort, "/headers?"+TokenParam+"="+doomed, nil)
	wantStatus(t, "the revoked key's signed URL", resp, body, 401, "invalid_preview_token")
	resp, body = e.get(idRunning, appPort, "/headers", fromPage)
	wantStatus(t, "the revoked key's cookie", resp, body, 401, "preview_private")
	resp, body = e.get(idRunning, appPort, "/headers?"+TokenParam+"="+kept, nil)
	wantStatus(t, "another key's signed URL", resp, body, 200, "")
	if held, _ := e.sessions.held("aaaa"); held != 0 {
		t.Errorf("%d of the revoked key's grants still held", held)
	}
}

// TestRouterSignedNeedsTenant: a token is refused unless the key that
// minted it is of the sandbox's tenant (a key cannot mint one for another
// tenant's sandbox; this holds should a token reach another).
func TestRouterSignedNeedsTenant(t *testing.T) {
	e := newEnv(t)
	u, _, err := e.rt.SignedURL(httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/x", nil), Target{idRunning, appPort}, "bbbb", 0)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(u)
	resp, body := e.get(idRunning, appPort, "/headers?"+TokenParam+"="+pu.Query().Get(TokenParam), nil)
	wantStatus(t, "another tenant's key's URL", resp, body, 401, "invalid_preview_token")
	if _, _, err := e.rt.SignedURL(httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/x", nil), Target{idRunning, appPort}, "", 0); err == nil {
		t.Error("a signed URL without a key id was made")
	}
}
