package router

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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/apps"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// fakeApps is one app, "shop" of tenant a, whose live pointer a test can
// swap; each sandbox is a server that says which one it is.
type fakeApps struct {
	mu       sync.Mutex
	app      store.App
	forgot   []string
	resolved atomic.Int64
}

func (f *fakeApps) Host(ctx context.Context, name string) (*apps.Host, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != f.app.Name {
		return nil, nil
	}
	return &apps.Host{ID: f.app.ID, TenantID: f.app.TenantID, Name: f.app.Name, Public: f.app.Public}, nil
}

// Target routes from the app as it is now.
func (f *fakeApps) Target(ctx context.Context, h *apps.Host, role string) (apps.Route, error) {
	f.resolved.Add(1)
	f.mu.Lock()
	a := f.app
	f.mu.Unlock()
	r := apps.Route{AppID: a.ID, TenantID: a.TenantID, Name: a.Name, Public: a.Public, Role: role, Sandbox: a.Live, Port: 80}
	if role == api.RoleDev {
		r.Sandbox = a.Dev
	}
	return r, nil
}

func (f *fakeApps) Unreachable(id string) {
	f.mu.Lock()
	f.forgot = append(f.forgot, id)
	f.mu.Unlock()
}

func (f *fakeApps) swap(live string) {
	f.mu.Lock()
	f.app.PreviousLive, f.app.Live = f.app.Live, live
	f.mu.Unlock()
}

// The app's three sandboxes (ids are ULIDs, as the tunnels' hosts want).
const (
	sbLive1 = "01aaaa1000000000000000000a"
	sbLive2 = "01aaaa2000000000000000000a"
	sbDev   = "01dddd0000000000000000000a"
)

// appEnv is a router with apps in front of three sandboxes: two lives and
// a dev.
type appEnv struct {
	t    *testing.T
	apps *fakeApps
	srv  *httptest.Server
	logs *testutil.Buffer
	// sessions are the requests API keys let in (fakeAuth).
	sessions *fakeSessions
}

func newAppEnv(t *testing.T) *appEnv {
	t.Helper()
	servers := map[string]*httptest.Server{}
	for _, who := range []string{sbLive1, sbLive2, sbDev} {
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{"who": who, "uri": r.RequestURI, "headers": r.Header})
		})
		mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			c.Write(r.Context(), websocket.MessageText, []byte(who))
			c.Read(r.Context()) // until the client goes
		})
		s := httptest.NewServer(mux)
		t.Cleanup(s.Close)
		servers[who] = s
	}
	fa := &fakeApps{app: store.App{ID: "app-1", TenantID: "tenant-a", Name: "shop", State: api.AppReady, Live: sbLive1, Dev: sbDev}}
	dial := DialFunc(func(ctx context.Context, id string, port int) (net.Conn, error) {
		s, ok := servers[id]
		if !ok {
			return nil, errdefs.FromHTTP(http.StatusBadGateway, "port_closed", "nothing listens")
		}
		return (&net.Dialer{}).DialContext(ctx, "tcp", s.Listener.Addr().String())
	})
	logs := &testutil.Buffer{}
	sessions := &fakeSessions{}
	rt, err := New(Config{Domain: "localhost", Key: bytes.Repeat([]byte{1}, KeyBytes), Sandboxes: &fakeStore{sbs: map[string]*store.Sandbox{}},
		Auth: fakeAuth{sessions: sessions}, Tunnels: dial, Log: slog.New(slog.NewJSONHandler(logs, nil)), Apps: fa})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	srv := httptest.NewServer(rt.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the API") })))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("router log:\n%s", logs)
		}
	})
	return &appEnv{t: t, apps: fa, srv: srv, logs: logs, sessions: sessions}
}

func (e *appEnv) host() string {
	u, _ := url.Parse(e.srv.URL)
	return "shop.localhost:" + u.Port()
}

// do sends method path to the app's host and returns the answer.
func (e *appEnv) do(method, path string, body io.Reader, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = e.host()
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// who is which sandbox answered, and with what request URI.
func who(t *testing.T, body string) (string, string, http.Header) {
	t.Helper()
	var got struct {
		Who     string      `json:"who"`
		URI     string      `json:"uri"`
		Headers http.Header `json:"headers"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		return "", "", nil
	}
	return got.Who, got.URI, got.Headers
}

// TestAppRoutes: who answers each path, what reaches the sandbox, and
// that hutch's credentials never do.
func TestAppRoutes(t *testing.T) {
	e := newAppEnv(t)
	key := map[string]string{"Authorization": "Bearer " + keyA, "Cookie": "hutch_app=x; theirs=1"}
	for _, tc := range []struct {
		path, who, uri string
	}{
		{"/", sbLive1, "/"},
		{"/a/b?c=d", sbLive1, "/a/b?c=d"},
		{"/dev", sbDev, "/"},
		{"/dev/", sbDev, "/"},
		{"/dev/a/b?c=d", sbDev, "/a/b?c=d"},
		{"/devx", sbLive1, "/devx"},
		{"/v1/info", "", ""},
		{"/provider/v1/x", "", ""},
		{"/dev/v1/info", "", ""},
	} {
		resp, body := e.do("GET", tc.path, nil, key)
		w, uri, h := who(t, body)
		if w != tc.who || uri != tc.uri {
			t.Errorf("GET %s: %s %s (%d %.80s), want %s %s", tc.path, w, uri, resp.StatusCode, body, tc.who, tc.uri)
			continue
		}
		if w == "" {
			continue
		}
		if h.Get("Authorization") != "" || strings.Contains(h.Get("Cookie"), "hutch_app") || h.Get("Cookie") != "theirs=1" {
			t.Errorf("GET %s: hutch's credentials reached the app: %v", tc.path, h)
		}
		if prefix := h.Get("X-Forwarded-Prefix"); (w == sbDev) != (prefix == "/dev") {
			t.Errorf("GET %s: X-Forwarded-Prefix %q", tc.path, prefix)
		}
	}
	if resp, body := e.do("GET", "/v1/info", nil, key); body != "the API" {
		t.Errorf("/v1/info: %d %s, want the API", resp.StatusCode, body)
	}
	resp, body := e.do("GET", "/dev/v1/info", nil, key)
	wantStatus(t, "/dev/v1/info", resp, body, http.StatusNotFound, "reserved_path")
	if !strings.Contains(e.logs.String(), `"role":"dev"`) || !strings.Contains(e.logs.String(), `"msg":"app request"`) {
		t.Errorf("no app request logged with its role:\n%s", e.logs)
	}
}

// TestAppPrivate: an unauthenticated browser goes to /login, an API
// client gets 401, another tenant's key finds nothing, a reader only
// reads, and /login's cookie lets the browser in, on this app only.
func TestAppPrivate(t *testing.T) {
	e := newAppEnv(t)
	resp, _ := e.do("GET", "/dev/x?y=1", nil, map[string]string{"Accept": "text/html"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next="+url.QueryEscape("/dev/x?y=1") {
		t.Fatalf("browser: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := e.do("GET", "/x", nil, nil)
	wantStatus(t, "API client", resp, body, http.StatusUnauthorized, "app_private")
	resp, body = e.do("GET", "/x", nil, map[string]string{"Authorization": "Bearer " + keyB})
	wantStatus(t, "another tenant's key", resp, body, http.StatusNotFound, "app_not_found")
	resp, body = e.do("POST", "/x", nil, map[string]string{"Authorization": "Bearer " + keyR})
	wantStatus(t, "a reader's POST", resp, body, http.StatusForbidden, "member_required")

	// The sign-in: a wrong key, another tenant's, then the right one.
	form := func(k string) io.Reader {
		return strings.NewReader(url.Values{"key": {k}, "next": {"/dev/x"}}.Encode())
	}
	ct := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for _, k := range []string{"hk_nope_nope", keyB} {
		if resp, _ := e.do("POST", "/login", form(k), ct); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("login with %s: %d", k, resp.StatusCode)
		}
	}
	ct["Origin"] = "http://elsewhere.example"
	if resp, _ := e.do("POST", "/login", form(keyA), ct); resp.StatusCode != http.StatusForbidden {
		t.Errorf("login from another site: %d", resp.StatusCode)
	}
	delete(ct, "Origin")
	resp, _ = e.do("POST", "/login", form(keyA), ct)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dev/x" {
		t.Fatalf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == AppCookieName {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
		t.Fatalf("login cookie %+v", cookie)
	}
	// An open redirect is refused: next stays on this host.
	resp, _ = e.do("POST", "/login", strings.NewReader(url.Values{"key": {keyA}, "next": {"//evil.example/"}}.Encode()), ct)
	if resp.Header.Get("Location") != "/" {
		t.Errorf("next //evil.example/ redirected to %q", resp.Header.Get("Location"))
	}
	page := map[string]string{"Cookie": AppCookieName + "=" + cookie.Value, "Sec-Fetch-Site": "same-origin"}
	if _, body := e.do("GET", "/dev/x", nil, page); !strings.Contains(body, `"who":"`+sbDev+`"`) {
		t.Errorf("with the cookie: %.120s", body)
	}
	// The cookie is this app's only: another app's signature does not
	// pass, nor does a sibling's fetch.
	e.apps.mu.Lock()
	e.apps.app.ID = "app-2"
	e.apps.mu.Unlock()
	if resp, _ := e.do("GET", "/x", nil, page); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another app's cookie: %d", resp.StatusCode)
	}
	// Public: everyone in.
	e.apps.mu.Lock()
	e.apps.app.Public = true
	e.apps.mu.Unlock()
	if _, body := e.do("GET", "/x", nil, nil); !strings.Contains(body, `"who":"`+sbLive1+`"`) {
		t.Errorf("public app: %.120s", body)
	}
}

// TestAppSwap: after a swap of the live pointer the next request and the
// next WebSocket reach the new sandbox, one already open stays where it
// was, and no request in flight fails (run it with -race).
func TestAppSwap(t *testing.T) {
	e := newAppEnv(t)
	e.apps.app.Public = true
	ctx := t.Context()
	old, _, err := websocket.Dial(ctx, "ws://"+e.srv.Listener.Addr().String()+"/ws", &websocket.DialOptions{Host: e.host()})
	if err != nil {
		t.Fatal(err)
	}
	defer old.CloseNow()
	if _, b, err := old.Read(ctx); err != nil || string(b) != sbLive1 {
		t.Fatalf("first socket: %q %v", b, err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", e.srv.URL+"/x", nil)
				req.Host = e.host()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if w, _, _ := who(t, string(b)); w != sbLive1 && w != sbLive2 {
					failed.Add(1)
				}
			}
		})
	}
	for i := range 20 {
		if i%2 == 0 {
			e.apps.swap(sbLive2)
		} else {
			e.apps.swap(sbLive1)
		}
	}
	e.apps.swap(sbLive2)
	close(stop)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed across the swaps", n)
	}
	if _, body := e.do("GET", "/x", nil, nil); !strings.Contains(body, `"who":"`+sbLive2+`"`) {
		t.Errorf("after the swap: %.120s", body)
	}
	fresh, _, err := websocket.Dial(ctx, "ws://"+e.srv.Listener.Addr().String()+"/ws", &websocket.DialOptions{Host: e.host()})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.CloseNow()
	if _, b, err := fresh.Read(ctx); err != nil || string(b) != sbLive2 {
		t.Fatalf("socket after the swap: %q %v", b, err)
	}
	// The old socket is still open, on the old sandbox.
	if err := old.Write(ctx, websocket.MessageText, []byte("still there")); err != nil {
		t.Errorf("the socket opened before the swap: %v", err)
	}
}

// login signs in to the app with key and returns the cookie's value.
func (e *appEnv) login(key string) string {
	e.t.Helper()
	resp, _ := e.do("POST", "/login", strings.NewReader(url.Values{"key": {key}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	for _, c := range resp.Cookies() {
		if c.Name == AppCookieName && resp.StatusCode == http.StatusSeeOther {
			return c.Value
		}
	}
	e.t.Fatalf("login with %s: %d, no cookie", key, resp.StatusCode)
	return ""
}

// TestAppCookieKeyRevoked: an app's sign-in cookie ends with the key that
// signed in, as the key's own requests do: once the key is revoked, the
// cookie is refused and a WebSocket it opened is closed; a cookie another
// key signed in with goes on.
func TestAppCookieKeyRevoked(t *testing.T) {
	e := newAppEnv(t)
	doomed, kept := e.login(keyA), e.login(keyA2)
	page := func(cookie string) map[string]string {
		return map[string]string{"Cookie": AppCookieName + "=" + cookie, "Sec-Fetch-Site": "same-origin"}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	hdr := http.Header{}
	for k, v := range page(doomed) {
		hdr.Set(k, v)
	}
	ws, _, err := websocket.Dial(ctx, "ws://"+e.srv.Listener.Addr().String()+"/ws", &websocket.DialOptions{Host: e.host(), HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, b, err := ws.Read(ctx); err != nil || string(b) != sbLive1 {
		t.Fatalf("the cookie's WebSocket: %q %v", b, err)
	}

	e.sessions.revoke("aaaa")
	wantRevokedWebSocketEnds(t, ctx, ws)
	resp, body := e.do("GET", "/x", nil, page(doomed))
	wantStatus(t, "the revoked key's cookie", resp, body, http.StatusUnauthorized, "app_private")
	if _, body := e.do("GET", "/x", nil, page(kept)); !strings.Contains(body, `"who":"`+sbLive1+`"`) {
		t.Errorf("another key's cookie: %.120s", body)
	}
}

// TestAppCookieReader: a reader key's sign-in views the app and does
// nothing else there, as the key itself: no method that changes anything,
// no WebSocket.
func TestAppCookieReader(t *testing.T) {
	e := newAppEnv(t)
	page := map[string]string{"Cookie": AppCookieName + "=" + e.login(keyR), "Sec-Fetch-Site": "same-origin"}
	if _, body := e.do("GET", "/x", nil, page); !strings.Contains(body, `"who":"`+sbLive1+`"`) {
		t.Errorf("a reader's GET: %.120s", body)
	}
	resp, body := e.do("POST", "/x", nil, page)
	wantStatus(t, "a reader's POST", resp, body, http.StatusForbidden, "member_required")
	page["Connection"], page["Upgrade"] = "Upgrade", "websocket"
	resp, body = e.do("GET", "/ws", nil, page)
	wantStatus(t, "a reader's WebSocket", resp, body, http.StatusForbidden, "member_required")
}
