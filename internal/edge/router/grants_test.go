package router

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
)

// clock makes e's router read a clock the test advances.
func (e *env) clock() (advance func(time.Duration)) {
	var mu sync.Mutex
	now := time.Now()
	e.rt.cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	return func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

// keptAlive is a client of e's previews that keeps one connection: each
// call says whether it reused the connection.
func (e *env) keptAlive() func(method, path string, hdr map[string]string) (*http.Response, string, bool) {
	e.t.Helper()
	addr := e.srv.Listener.Addr().String()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		},
		MaxConnsPerHost: 1,
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return func(method, path string, hdr map[string]string) (*http.Response, string, bool) {
		e.t.Helper()
		reused := false
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		})
		req, err := http.NewRequestWithContext(ctx, method, "http://"+e.hostHeader(idRunning, appPort)+path, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			e.t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b), reused
	}
}

// TestRouterKeyGrant: a key is checked once per grantTTL, not per request;
// each request is still held to the key's tenant and role; the grant's
// hold on the key ends once it has expired and its requests are done, and
// at Close.
func TestRouterKeyGrant(t *testing.T) {
	e := newEnv(t)
	advance := e.clock()
	_, checks0 := e.sessions.held("aaaa")
	for i := range 3 {
		resp, body := e.get(idRunning, appPort, "/headers", map[string]string{"Authorization": "Bearer " + keyA})
		wantStatus(t, "with the tenant's key", resp, body, 200, "")
		var saw appSaw
		json.Unmarshal([]byte(body), &saw)
		if a := saw.Headers.Get("Authorization"); a != "" {
			t.Fatalf("request %d: the key reached the app: %q", i, a)
		}
	}
	held, checks := e.sessions.held("aaaa")
	if checks-checks0 != 1 || held != 1 {
		t.Fatalf("three requests: %d checks of the key, %d held; want 1 and 1", checks-checks0, held)
	}
	for range 2 {
		resp, body := e.do("POST", idRunning, appPort, "/headers", map[string]string{"Authorization": "Bearer " + keyR})
		wantStatus(t, "a read-only key's POST", resp, body, 403, "member_required")
		resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Authorization": "Bearer " + keyB})
		wantStatus(t, "another tenant's key", resp, body, 404, "preview_not_found")
	}

	advance(grantTTL)
	_, checks0 = e.sessions.held("aaaa")
	resp, body := e.get(idRunning, appPort, "/headers", map[string]string{"Authorization": "Bearer " + keyA})
	wantStatus(t, "after grantTTL", resp, body, 200, "")
	held, checks = e.sessions.held("aaaa")
	if checks-checks0 != 1 || held != 1 {
		t.Fatalf("after grantTTL: %d checks, %d held; want 1 (checked again) and 1 (the old grant let go)", checks-checks0, held)
	}
	e.rt.Close()
	if held, _ = e.sessions.held("aaaa"); held != 0 {
		t.Fatalf("after Close, %d of the key's checks are held", held)
	}
}

// TestRouterKeyGrantRevoked: revoking a key the router has checked
// refuses its next request at once, and ends its WebSocket, also one the
// key opened under a grant that has since expired; another key goes on.
func TestRouterKeyGrantRevoked(t *testing.T) {
	e := newEnv(t)
	advance := e.clock()
	key := map[string]string{"Authorization": "Bearer " + keyA}
	resp, body := e.get(idRunning, appPort, "/headers", key)
	wantStatus(t, "before", resp, body, 200, "")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr := e.srv.Listener.Addr().String()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}}}
	ws, _, err := websocket.Dial(ctx, "ws://"+e.hostHeader(idRunning, appPort)+"/ws", &websocket.DialOptions{HTTPClient: hc,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + keyA}}})
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
	// The WebSocket's grant expires; a new request makes another.
	advance(grantTTL)
	resp, body = e.get(idRunning, appPort, "/headers", key)
	wantStatus(t, "a new grant", resp, body, 200, "")
	if held, _ := e.sessions.held("aaaa"); held != 2 {
		t.Fatalf("%d checks of the key held, want 2: the expired grant's WebSocket is open", held)
	}

	e.sessions.revoke("aaaa")
	resp, body = e.get(idRunning, appPort, "/headers", key)
	wantStatus(t, "the revoked key", resp, body, 401, "invalid_api_key")
	wantRevokedWebSocketEnds(t, ctx, ws)
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Authorization": "Bearer " + keyA2})
	wantStatus(t, "another key of the tenant", resp, body, 200, "")
}

// TestRouterKeepAliveStripsEveryRequest: the requests of one kept-alive
// connection are each authorized and stripped of hutch's credentials: a
// key, the preview cookie, a token in the Referer; a request with nothing
// to show on a connection a key or the cookie let in is refused, and so is
// a sibling's use of the cookie on it.
func TestRouterKeepAliveStripsEveryRequest(t *testing.T) {
	e := newEnv(t)
	cookie, own := e.sessionCookie()
	do := e.keptAlive()
	check := func(what string, i int, body string) {
		t.Helper()
		var saw appSaw
		if err := json.Unmarshal([]byte(body), &saw); err != nil {
			t.Fatalf("%s %d: %v: %s", what, i, err, body)
		}
		h := saw.Headers
		switch {
		case h.Get("Authorization") != "":
			t.Errorf("%s %d: the key reached the app: %q", what, i, h.Get("Authorization"))
		case strings.Contains(h.Get("Cookie"), CookieName) || h.Get("Cookie") != "app=1":
			t.Errorf("%s %d: cookies the app got: %q", what, i, h.Get("Cookie"))
		case strings.Contains(h.Get("Referer"), TokenParam):
			t.Errorf("%s %d: the Referer's token reached the app: %q", what, i, h.Get("Referer"))
		}
	}
	for i := range 3 {
		resp, body, reused := do("GET", "/headers", map[string]string{"Authorization": "Bearer " + keyA, "Cookie": "app=1",
			"Referer": own + "/?" + TokenParam + "=x"})
		wantStatus(t, "key", resp, body, 200, "")
		if i > 0 && !reused {
			t.Fatalf("key %d: a new connection", i)
		}
		check("key", i, body)
		resp, body, _ = do("GET", "/headers", map[string]string{"Cookie": "app=1"})
		wantStatus(t, "nothing to show", resp, body, 401, "preview_private")
	}
	for i := range 3 {
		resp, body, reused := do("GET", "/headers", map[string]string{"Cookie": CookieName + "=" + cookie + "; app=1",
			"Sec-Fetch-Site": "same-origin", "Referer": own + "/x?" + TokenParam + "=y"})
		wantStatus(t, "cookie", resp, body, 200, "")
		if !reused {
			t.Fatalf("cookie %d: a new connection", i)
		}
		check("cookie", i, body)
		resp, body, _ = do("GET", "/headers", map[string]string{"Cookie": CookieName + "=" + cookie + "; app=1",
			"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"})
		wantStatus(t, "a sibling's fetch with the cookie", resp, body, 403, "preview_cookie_refused")
	}
}

// TestRouterLookupRefresh: a busy preview's lookup is read anew once it is
// lookupRefresh old, by one request, before it expires; a read begun
// before a Forget is not kept.
func TestRouterLookupRefresh(t *testing.T) {
	e := newEnv(t)
	advance := e.clock()
	key := map[string]string{"Authorization": "Bearer " + keyA}
	reads := func() int {
		e.st.mu.Lock()
		defer e.st.mu.Unlock()
		return e.st.reads
	}
	get := func(what string, status int) {
		t.Helper()
		resp, body := e.get(idRunning, appPort, "/headers", key)
		wantStatus(t, what, resp, body, status, "")
	}
	get("first", 200)
	r0 := reads()
	advance(lookupRefresh - time.Millisecond)
	get("fresh", 200)
	if n := reads() - r0; n != 0 {
		t.Fatalf("a fresh lookup: %d reads", n)
	}
	// Due for a refresh: one request reads the store, and while it does,
	// the others go on with what was read.
	advance(time.Millisecond)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.st.mu.Lock()
	e.st.onGet = func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	e.st.mu.Unlock()
	refreshed := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", e.srv.URL+"/headers", nil)
		req.Host = e.hostHeader(idRunning, appPort)
		req.Header.Set("Authorization", "Bearer "+keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			refreshed <- 0
			return
		}
		resp.Body.Close()
		refreshed <- resp.StatusCode
	}()
	<-entered
	for range 3 {
		get("while another request refreshes", 200)
	}
	close(release)
	if status := <-refreshed; status != 200 {
		t.Fatalf("the refreshing request: %d", status)
	}
	e.st.mu.Lock()
	e.st.onGet = nil
	e.st.mu.Unlock()
	if n := reads() - r0; n != 1 {
		t.Fatalf("a lookup due for a refresh: %d reads, want 1", n)
	}

	// A stop seen by a refresh is served at once.
	advance(lookupRefresh)
	e.st.setState(idRunning, api.StateStopped)
	resp, body := e.get(idRunning, appPort, "/", key)
	wantStatus(t, "stopped", resp, body, 503, "sandbox_not_running")
	e.st.setState(idRunning, api.StateRunning)

	// Forgotten while it is read: the next request reads again.
	var forget sync.Once
	e.st.mu.Lock()
	e.st.onGet = func() { forget.Do(func() { e.rt.Forget(idRunning) }) }
	e.st.mu.Unlock()
	r0 = reads()
	get("read across a Forget", 200)
	get("after", 200)
	if n := reads() - r0; n != 2 {
		t.Fatalf("a read begun before a Forget was kept: %d reads, want 2", n)
	}
}
