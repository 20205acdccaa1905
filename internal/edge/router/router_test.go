package router

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/edge/router/previewhost"
	"github.com/hutchdev/hutch/internal/store"
)

func TestRouterPassesOtherHostsToTheAPI(t *testing.T) {
	e := newEnv(t)
	for _, h := range []string{"", "localhost", "x.localhost", "0-" + idRunning + ".localhost", host(idRunning, 3000) + ".evil"} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/info", nil)
		if h != "" {
			req.Host = h
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "the API" {
			t.Errorf("Host %q: %d %s", h, resp.StatusCode, b)
		}
	}
}

func TestRouterPrivateByDefault(t *testing.T) {
	e := newEnv(t)
	resp, body := e.get(idRunning, appPort, "/headers", nil)
	wantStatus(t, "no credentials", resp, body, 401, "preview_private")
	if resp.Header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	resp, body = e.get(idRunning, appPort, "/", map[string]string{"Accept": "text/html,*/*"})
	if resp.StatusCode != 401 || !strings.Contains(body, "This preview is private") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("browser without credentials: %d %s", resp.StatusCode, body)
	}
	// A sandbox that does not exist looks the same to an anonymous caller.
	resp, body = e.get(idMissing, appPort, "/", nil)
	wantStatus(t, "missing sandbox, no credentials", resp, body, 401, "preview_private")
	resp, body = e.get(idRunning, appPort, "/", map[string]string{"Authorization": "Bearer hk_wrong_wrong"})
	wantStatus(t, "bad key", resp, body, 401, "invalid_api_key")
	resp, body = e.get(idRunning, appPort, "/", map[string]string{"Authorization": "Bearer " + keyB})
	wantStatus(t, "another tenant's key", resp, body, 404, "preview_not_found")
	resp, body = e.get(idMissing, appPort, "/", map[string]string{"Authorization": "Bearer " + keyA})
	wantStatus(t, "missing sandbox with a key", resp, body, 404, "preview_not_found")
	if e.dials != 0 {
		t.Fatalf("refused requests dialled %d tunnels", e.dials)
	}
}

// appSaw is what the sandbox's program received.
type appSaw struct {
	Host    string      `json:"host"`
	URI     string      `json:"uri"`
	Headers http.Header `json:"headers"`
}

func TestRouterWithKey(t *testing.T) {
	e := newEnv(t)
	resp, body := e.get(idRunning, appPort, "/headers?a=1&hutch_retry=2&b=%20", map[string]string{
		"Authorization":    "Bearer " + keyA,
		"Cookie":           "app=1; hutch_preview=stale; other=2",
		"X-Forwarded-For":  "6.6.6.6",
		"X-Forwarded-Host": "evil.example",
		"Connection":       "keep-alive, X-Secret",
		"X-Secret":         "hop",
	})
	wantStatus(t, "with the tenant's key", resp, body, 200, "")
	var saw appSaw
	if err := json.Unmarshal([]byte(body), &saw); err != nil {
		t.Fatal(err)
	}
	h := saw.Headers
	switch {
	case h.Get("Authorization") != "":
		t.Errorf("the key reached the app: %q", h.Get("Authorization"))
	case h.Get("Cookie") != "app=1; other=2":
		t.Errorf("cookies the app got: %q", h.Get("Cookie"))
	case h.Get("X-Forwarded-For") != "127.0.0.1":
		t.Errorf("X-Forwarded-For %q", h.Get("X-Forwarded-For"))
	case !strings.HasPrefix(h.Get("X-Forwarded-Host"), host(idRunning, appPort)+":"):
		t.Errorf("X-Forwarded-Host %q", h.Get("X-Forwarded-Host"))
	case h.Get("X-Forwarded-Proto") != "http":
		t.Errorf("X-Forwarded-Proto %q", h.Get("X-Forwarded-Proto"))
	case h.Get("X-Secret") != "":
		t.Errorf("a hop-by-hop header named in Connection passed: %q", h.Get("X-Secret"))
	case !strings.HasPrefix(saw.Host, host(idRunning, appPort)):
		t.Errorf("Host %q", saw.Host)
	case saw.URI != "/headers?a=1&b=%20":
		t.Errorf("request URI %q", saw.URI)
	}
	// An Authorization of the app's own passes. (The API forgets what the
	// router read when it changes a port; here the store is changed
	// directly.)
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
	e.rt.Forget(idRunning)
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Authorization": "Basic dXNlcjpwdw=="})
	wantStatus(t, "public with Basic auth", resp, body, 200, "")
	json.Unmarshal([]byte(body), &saw)
	if saw.Headers.Get("Authorization") != "Basic dXNlcjpwdw==" {
		t.Errorf("the app's own Authorization: %q", saw.Headers.Get("Authorization"))
	}
	if !strings.Contains(e.logs.String(), `"access":"key"`) || !strings.Contains(e.logs.String(), `"sandbox.id":"`+idRunning+`"`) {
		t.Errorf("log: %s", e.logs)
	}
}

// TestRouterReaderKey: a read-only key views a private preview and does
// nothing else there: no method that changes anything, no WebSocket.
func TestRouterReaderKey(t *testing.T) {
	e := newEnv(t)
	resp, body := e.get(idRunning, appPort, "/headers", map[string]string{"Authorization": "Bearer " + keyR})
	wantStatus(t, "a reader's GET", resp, body, 200, "")
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Authorization": "Bearer " + keyR,
		"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
	wantStatus(t, "a reader's WebSocket", resp, body, 403, "member_required")
	req, err := http.NewRequest("POST", e.srv.URL+"/headers", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host(idRunning, appPort) + ":" + e.srv.Listener.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1:"):]
	req.Header.Set("Authorization", "Bearer "+keyR)
	req.Header.Set("Accept", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantStatus(t, "a reader's POST", resp, string(b), 403, "member_required")
}

func TestRouterSignedURL(t *testing.T) {
	e := newEnv(t)
	apiReq := httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/x", nil)
	u, exp, err := e.rt.SignedURL(apiReq, Target{idRunning, appPort}, "aaaa", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(exp); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("default expiry in %s", d)
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Host != host(idRunning, appPort)+":7070" || pu.Path != "/" {
		t.Fatalf("signed URL %q", u)
	}
	tok := pu.Query().Get(TokenParam)

	resp, body := e.get(idRunning, appPort, "/headers?x=1&hutch_token="+tok, nil)
	wantStatus(t, "signed URL", resp, body, 200, "")
	var saw appSaw
	json.Unmarshal([]byte(body), &saw)
	if saw.URI != "/headers?x=1" {
		t.Errorf("the token reached the app: %q", saw.URI)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Domain != "" || cookie.Path != "/" || cookie.Secure {
		t.Fatalf("cookie %+v", cookie)
	}
	// The cookie lets the same host in, on its own pages' requests
	// (cookie_test.go), but not another port.
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Cookie": CookieName + "=" + cookie.Value,
		"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"})
	wantStatus(t, "cookie", resp, body, 200, "")
	resp, body = e.get(idRunning, 4000, "/headers", map[string]string{"Cookie": CookieName + "=" + cookie.Value})
	wantStatus(t, "cookie on another port", resp, body, 401, "preview_private")
	// Nor the URL token as a cookie.
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Cookie": CookieName + "=" + tok})
	wantStatus(t, "token as a cookie", resp, body, 401, "preview_private")
	// Another page's script cannot use it, nor open a WebSocket with it.
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Cookie": CookieName + "=" + cookie.Value,
		"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Origin": "http://" + host(idMissing, 80)})
	wantStatus(t, "cookie from another preview's script", resp, body, 403, "preview_cookie_refused")
	// A link from elsewhere is fine.
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Cookie": CookieName + "=" + cookie.Value,
		"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
	wantStatus(t, "navigation from elsewhere", resp, body, 200, "")

	// Tampered, for another port, expired.
	bad := tok[:len(tok)-2] + "xx"
	resp, body = e.get(idRunning, appPort, "/?hutch_token="+bad, nil)
	wantStatus(t, "tampered", resp, body, 401, "invalid_preview_token")
	resp, body = e.get(idRunning, 4000, "/?hutch_token="+tok, nil)
	wantStatus(t, "another port", resp, body, 401, "invalid_preview_token")
	e.rt.cfg.Now = func() time.Time { return exp.Add(time.Second) }
	resp, body = e.get(idRunning, appPort, "/?hutch_token="+tok, nil)
	wantStatus(t, "expired", resp, body, 401, "invalid_preview_token")
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Cookie": CookieName + "=" + cookie.Value})
	wantStatus(t, "expired cookie", resp, body, 401, "preview_private")
	e.rt.cfg.Now = time.Now

	// A browser's navigation is sent on without the token in its address.
	resp, _ = e.get(idRunning, appPort, "/page?x=1&hutch_token="+tok, map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none", "Sec-Fetch-Dest": "document"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/page?x=1" || len(resp.Cookies()) != 1 {
		t.Fatalf("navigation with a token: %d, Location %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}

	for _, ttl := range []time.Duration{-time.Second, time.Millisecond, MaxURLTTL + time.Second} {
		if _, _, err := e.rt.SignedURL(apiReq, Target{idRunning, appPort}, "aaaa", ttl); err == nil {
			t.Errorf("SignedURL(ttl %s) succeeded", ttl)
		}
	}
}

func TestRouterPublicPort(t *testing.T) {
	e := newEnv(t)
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
	resp, body := e.get(idRunning, appPort, "/headers", nil)
	wantStatus(t, "public", resp, body, 200, "")
	resp, body = e.get(idRunning, 4000, "/headers", nil)
	wantStatus(t, "another port stays private", resp, body, 401, "preview_private")
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: false})
	e.rt.Forget(idRunning)
	resp, body = e.get(idRunning, appPort, "/headers", nil)
	wantStatus(t, "private again", resp, body, 401, "preview_private")
}

// TestRouterPublicURL: behind a proxy that ends TLS, links, the cookie
// and the same-origin check follow the configured public URL, not the
// plain HTTP the proxy forwards.
func TestRouterPublicURL(t *testing.T) {
	e := newEnv(t)
	apiReq := httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/x", nil)
	for raw, want := range map[string]string{
		"https://localhost":      "https://" + host(idRunning, appPort) + "/",
		"https://LOCALHOST:8443": "https://" + host(idRunning, appPort) + ":8443/",
		"http://localhost:8080/": "http://" + host(idRunning, appPort) + ":8080/",
	} {
		u, err := previewhost.ParsePublicURL(raw, "localhost")
		if err != nil {
			t.Fatal(err)
		}
		e.rt.public = u
		if got := e.rt.URL(apiReq, Target{idRunning, appPort}); got != want {
			t.Errorf("URL with public URL %s = %s, want %s", raw, got, want)
		}
	}

	e.rt.public, _ = previewhost.ParsePublicURL("https://localhost", "localhost")
	signed, _, err := e.rt.SignedURL(apiReq, Target{idRunning, appPort}, "aaaa", 0)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(signed)
	resp, body := e.get(idRunning, appPort, "/headers?hutch_token="+pu.Query().Get(TokenParam), nil)
	wantStatus(t, "signed URL", resp, body, 200, "")
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			cookie = c
		}
	}
	if cookie == nil || !cookie.Secure {
		t.Fatalf("cookie behind TLS %+v, want Secure", cookie)
	}
	hostHeader := host(idRunning, appPort) + ":" + strconv.Itoa(e.srv.Listener.Addr().(*net.TCPAddr).Port)
	upgrade := func(origin string) map[string]string {
		return map[string]string{"Cookie": CookieName + "=" + cookie.Value, "Origin": origin,
			"Connection": "Upgrade", "Upgrade": "websocket"}
	}
	resp, body = e.get(idRunning, appPort, "/headers", upgrade("https://"+hostHeader))
	if resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("an upgrade from the preview's own https origin was refused: %s", body)
	}
	resp, body = e.get(idRunning, appPort, "/headers", upgrade("http://"+hostHeader))
	wantStatus(t, "an upgrade from the plain-http origin", resp, body, 403, "preview_cookie_refused")
}

// eventLog keeps the events the router records.
type eventLog struct {
	mu  sync.Mutex
	evs []events.Event
}

func (l *eventLog) AppendEvent(ctx context.Context, e *events.Event) error {
	if p, ok := tenancy.From(ctx); !ok || p.TenantID != e.TenantID {
		return errors.New("not the event's tenant")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, *e)
	return nil
}

func (l *eventLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.evs)
}

// TestRouterReconnectStorm: StormUpgrades upgrades to one sandbox within
// the window are one storm, reported once a minute at most; upgrades
// spread out are none.
func TestRouterReconnectStorm(t *testing.T) {
	e := newEnv(t)
	events := &eventLog{}
	e.rt.cfg.Events = events
	var mu sync.Mutex
	now := time.Now()
	e.rt.cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
	upgrade := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}

	// Spread over more than the window: no storm.
	for range StormUpgrades {
		e.get(idRunning, appPort, "/headers", upgrade)
		advance(stormWindow / 10)
	}
	if n := events.count(); n != 0 {
		t.Fatalf("%d storm events for upgrades spread out", n)
	}
	advance(stormWindow)
	for range StormUpgrades - 1 {
		e.get(idRunning, appPort, "/headers", upgrade)
	}
	if n := events.count(); n != 0 {
		t.Fatalf("a storm reported below the threshold")
	}
	e.get(idRunning, appPort, "/headers", nil) // plain requests do not count
	e.get(idRunning, appPort, "/headers", upgrade)
	if n := events.count(); n != 1 {
		t.Fatalf("%d events at the threshold, want 1", n)
	}
	ev := events.evs[0]
	if ev.Type != api.EventPreviewReconnectStorm || ev.SandboxID != idRunning || ev.Data["port"] != appPort || ev.Data["count"] != StormUpgrades {
		t.Errorf("event %+v", ev)
	}
	// Still storming: not again within the minute, again after it.
	for range 3 * StormUpgrades {
		e.get(idRunning, appPort, "/headers", upgrade)
	}
	if n := events.count(); n != 1 {
		t.Fatalf("%d events within the minute, want 1", n)
	}
	advance(stormReportEvery)
	for range StormUpgrades {
		e.get(idRunning, appPort, "/headers", upgrade)
	}
	if n := events.count(); n != 2 {
		t.Fatalf("%d events after the minute, want 2", n)
	}
	if !strings.Contains(e.logs.String(), "reconnect storm") {
		t.Error("no log line")
	}
}

// TestRouterLookupCache: what the router read of a running sandbox's port
// serves for lookupTTL, unless the API forgets it; a sandbox that is not
// running is read on every request.
func TestRouterLookupCache(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	now := time.Now()
	e.rt.cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	setPublic := func(public bool) {
		e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: public})
	}
	setPublic(true)
	resp, body := e.get(idRunning, appPort, "/headers", nil)
	wantStatus(t, "public", resp, body, 200, "")
	setPublic(false) // changed elsewhere: not forgotten here
	resp, body = e.get(idRunning, appPort, "/headers", nil)
	wantStatus(t, "within the TTL of what was read", resp, body, 200, "")
	advance(lookupTTL)
	resp, body = e.get(idRunning, appPort, "/headers", nil)
	wantStatus(t, "after the TTL", resp, body, 401, "preview_private")
	setPublic(true)
	e.rt.Forget(idRunning)
	resp, body = e.get(idRunning, appPort, "/headers", nil)
	wantStatus(t, "forgotten", resp, body, 200, "")

	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idStopped, Port: appPort, Public: true})
	resp, body = e.get(idStopped, appPort, "/", nil)
	wantStatus(t, "stopped", resp, body, 503, "sandbox_not_running")
	e.st.mu.Lock()
	delete(e.st.sbs, idStopped)
	e.st.mu.Unlock()
	resp, body = e.get(idStopped, appPort, "/", nil)
	wantStatus(t, "gone, read again at once", resp, body, 401, "preview_private")
}

func TestRouterFailures(t *testing.T) {
	e := newEnv(t)
	key := map[string]string{"Authorization": "Bearer " + keyA}
	resp, body := e.get(idRunning, shutPort, "/", key)
	wantStatus(t, "closed port", resp, body, 502, "port_closed")
	resp, body = e.get(idProcess, appPort, "/", key)
	wantStatus(t, "no network of its own", resp, body, 501, "previews_unsupported")

	resp, body = e.get(idStopped, appPort, "/", key)
	wantStatus(t, "stopped", resp, body, 503, "sandbox_not_running")
	if resp.Header.Get("Retry-After") != "2" {
		t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	// The page reloads itself, counting, and stops at MaxRetries (3).
	html := map[string]string{"Authorization": "Bearer " + keyA, "Accept": "text/html"}
	port := e.srv.Listener.Addr().(*net.TCPAddr).Port
	for n, want := range []string{
		fmt.Sprintf(`url=http://%s:%d/a?b=c&amp;hutch_retry=1"`, host(idStopped, appPort), port),
		fmt.Sprintf(`url=http://%s:%d/a?b=c&amp;hutch_retry=2"`, host(idStopped, appPort), port),
		fmt.Sprintf(`url=http://%s:%d/a?b=c&amp;hutch_retry=3"`, host(idStopped, appPort), port),
		"Gave up after 3 attempts",
	} {
		path := "/a?b=c"
		if n > 0 {
			path += fmt.Sprintf("&hutch_retry=%d", n)
		}
		resp, body = e.get(idStopped, appPort, path, html)
		if resp.StatusCode != 503 || !strings.Contains(body, want) {
			t.Fatalf("retry %d: %d, want %q in\n%s", n, resp.StatusCode, want, body)
		}
		if n == 3 && strings.Contains(body, "http-equiv") {
			t.Fatalf("the last page still reloads:\n%s", body)
		}
	}
	// A path that looks like another host stays on the preview's.
	resp, body = e.get(idStopped, appPort, "//evil.example/x", html)
	if !strings.Contains(body, fmt.Sprintf("url=http://%s:%d//evil.example/x?hutch_retry=1", host(idStopped, appPort), port)) {
		t.Fatalf("reload URL of //evil.example/x:\n%s", body)
	}
	e.st.setState(idStopped, api.StateDestroyed)
	resp, body = e.get(idStopped, appPort, "/", key)
	wantStatus(t, "destroyed", resp, body, 404, "preview_not_found")
}

// TestRouterStreams: an event stream arrives event by event, and a
// WebSocket echoes, through the router; a refused upgrade is logged with
// its reason.
func TestRouterStreams(t *testing.T) {
	e := newEnv(t)
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
	addr := e.srv.Listener.Addr().String()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		},
	}}
	_, port, _ := net.SplitHostPort(addr)
	base := "http://" + host(idRunning, appPort) + ":" + port

	start := time.Now()
	resp, err := hc.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	first := time.Since(start)
	if err != nil || line != "data: 1\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	total := time.Since(start)
	if !strings.Contains(string(rest), "data: 5") || first > total/2 {
		t.Fatalf("first event after %s of %s: the stream was buffered (rest %q)", first, total, rest)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+host(idRunning, appPort)+":"+port+"/ws", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, m := range []string{"one", "two"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		_, b, err := c.Read(ctx)
		if err != nil || string(b) != "echo: "+m {
			t.Fatalf("echo %q, %v", b, err)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")

	// An upgrade to a closed port fails with a reason in the log.
	_, _, err = websocket.Dial(ctx, "ws://"+host(idRunning, shutPort)+":"+port+"/ws", &websocket.DialOptions{HTTPClient: hc,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + keyA}}})
	if err == nil {
		t.Fatal("WebSocket to a closed port succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(e.logs.String(), `"upgrade":"websocket","reason":"port_closed"`) ||
		!strings.Contains(e.logs.String(), `"status":101`) {
		if time.Now().After(deadline) {
			t.Fatalf("the log lacks the failed upgrade or the WebSocket's 101:\n%s", e.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStripQuery(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"hutch_token=x", ""},
		{"a=1&hutch_token=x&b=%2F", "a=1&b=%2F"},
		{"hutch%5Ftoken=x&a", "a"},
		{"hutch_retry=3&hutch_token=x", ""},
		{"a=hutch_token", "a=hutch_token"},
		{"a=1&b=2", "a=1&b=2"},
		{"%68utch_token=x&a=1", "a=1"},
		{"hutch_tokens=x", "hutch_tokens=x"},
	} {
		if got := stripQuery(tt.in, TokenParam, RetryParam); got != tt.want {
			t.Errorf("stripQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzStripQuery: whatever the query, no parameter left names what was
// stripped, however it is escaped, and a query that names none of them
// is left as it was.
func FuzzStripQuery(f *testing.F) {
	for _, s := range []string{"", "a=1", "hutch_token=x&a", "%68utch%5Ftoken=x", "a=%zz&hutch_retry=1", "&&=&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out := stripQuery(raw, TokenParam, RetryParam)
		named := false
		for _, p := range strings.Split(raw, "&") {
			k, _, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(k); err == nil && (n == TokenParam || n == RetryParam) {
				named = true
			}
		}
		if !named && out != raw && !(raw == "" && out == "") {
			t.Fatalf("stripQuery(%q) = %q: changed a query naming nothing to strip", raw, out)
		}
		if out == "" {
			return
		}
		for _, p := range strings.Split(out, "&") {
			k, _, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(k); err == nil && (n == TokenParam || n == RetryParam) {
				t.Fatalf("stripQuery(%q) = %q: %q is left", raw, out, p)
			}
		}
	})
}
