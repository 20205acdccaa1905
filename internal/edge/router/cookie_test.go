package router

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/testutil"
)

// sessionCookie opens a signed URL of idRunning's appPort and returns the
// cookie it leaves and the preview's own origin.
func (e *env) sessionCookie() (cookie, origin string) {
	e.t.Helper()
	u, _, err := e.rt.SignedURL(httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/x", nil), Target{idRunning, appPort}, "aaaa", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	pu, _ := url.Parse(u)
	resp, body := e.get(idRunning, appPort, "/headers?"+TokenParam+"="+pu.Query().Get(TokenParam), nil)
	wantStatus(e.t, "signed URL", resp, body, 200, "")
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			cookie = c.Value
		}
	}
	if cookie == "" {
		e.t.Fatal("the signed URL left no cookie")
	}
	return cookie, "http://" + e.hostHeader(idRunning, appPort)
}

// hostHeader is the Host a client of e.srv sends for the preview.
func (e *env) hostHeader(id string, port int) string {
	return host(id, port) + ":" + strconv.Itoa(e.srv.Listener.Addr().(*net.TCPAddr).Port)
}

// TestRouterCookieNeedsProvenance: the preview cookie is accepted only on
// requests shown to come from the preview's own pages, or on top-level
// navigations. Every preview shares the preview domain's site, so on a
// custom domain a sibling preview's page is same-site: the cookie's
// SameSite=Lax goes with its fetch() and its iframes, and over plain HTTP
// (not a potentially trustworthy origin) Chromium sends no Sec-Fetch-*.
// An API key or a signed token in the URL is unaffected.
func TestRouterCookieNeedsProvenance(t *testing.T) {
	e := newEnv(t)
	cookie, own := e.sessionCookie()
	sibling := "http://" + e.hostHeader(idStopped, 8080)
	const (
		ok      = 200
		refused = 403
	)
	for _, tt := range []struct {
		name   string
		method string
		hdr    map[string]string
		want   int
	}{
		// Without Fetch Metadata (plain HTTP on a custom domain, or not a
		// browser): only an Origin or Referer of the preview itself proves
		// where the request came from.
		{"no metadata, nothing to prove", "", nil, refused},
		{"no metadata, own Referer", "", map[string]string{"Referer": own + "/page?a=1"}, ok},
		{"no metadata, own Origin", "", map[string]string{"Origin": own}, ok},
		{"no metadata, own Origin, POST", "POST", map[string]string{"Origin": own}, ok},
		{"no metadata, own Origin, WebSocket", "", map[string]string{"Origin": own, "Connection": "Upgrade", "Upgrade": "websocket"}, ok},
		{"no metadata, sibling's fetch", "", map[string]string{"Origin": sibling, "Referer": sibling + "/"}, refused},
		{"no metadata, sibling's fetch with an own Referer", "", map[string]string{"Origin": sibling, "Referer": own + "/"}, refused},
		{"no metadata, sibling's iframe", "", map[string]string{"Referer": sibling + "/attack"}, refused},
		{"no metadata, Origin null", "", map[string]string{"Origin": "null"}, refused},
		{"no metadata, Origin null with an own Referer", "", map[string]string{"Origin": "null", "Referer": own + "/"}, refused},
		{"no metadata, Referer of another port", "", map[string]string{"Referer": "http://" + e.hostHeader(idRunning, 4000) + "/"}, refused},
		{"no metadata, Referer over https", "", map[string]string{"Referer": "https://" + e.hostHeader(idRunning, appPort) + "/"}, refused},
		{"no metadata, Referer not a URL", "", map[string]string{"Referer": "::"}, refused},

		// With Fetch Metadata.
		{"same-origin fetch", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, ok},
		{"same-origin iframe", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, ok},
		{"same-origin POST", "POST", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": own}, ok},
		{"same-origin WebSocket", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "websocket", "Origin": own, "Connection": "Upgrade", "Upgrade": "websocket"}, ok},
		{"typed or bookmarked", "", map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, ok},
		{"a link from elsewhere", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, ok},
		{"a link from a sibling", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Referer": sibling + "/"}, ok},
		{"sibling's iframe", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, refused},
		{"another site's iframe", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, refused},
		{"sibling's frame", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "frame"}, refused},
		{"sibling's embed", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "embed"}, refused},
		{"sibling's fetch", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Origin": sibling}, refused},
		{"sibling's script", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"}, refused},
		{"sibling's WebSocket", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "websocket", "Origin": sibling, "Connection": "Upgrade", "Upgrade": "websocket"}, refused},
		{"sibling's form POST", "POST", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Origin": sibling}, refused},
		{"navigation without a destination", "", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"}, refused},
		{"none, not a navigation", "", map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "empty"}, refused},
		{"same-origin says the metadata, not the Origin", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": sibling}, refused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{"Cookie": CookieName + "=" + cookie}
			for k, v := range tt.hdr {
				hdr[k] = v
			}
			resp, body := e.do(tt.method, idRunning, appPort, "/headers", hdr)
			if tt.want == ok {
				wantStatus(t, tt.name, resp, body, ok, "")
			} else {
				wantStatus(t, tt.name, resp, body, refused, "preview_cookie_refused")
			}
		})
	}

	// Credentials that are not the cookie are unchanged: a signed token
	// in the URL, or an API key, lets even a sibling's iframe in.
	u, _, _ := e.rt.SignedURL(httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/x", nil), Target{idRunning, appPort}, "aaaa", 0)
	pu, _ := url.Parse(u)
	frame := map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
	resp, body := e.get(idRunning, appPort, "/headers?"+TokenParam+"="+pu.Query().Get(TokenParam), frame)
	wantStatus(t, "signed token, sibling's iframe", resp, body, 200, "")
	frame["Authorization"] = "Bearer " + keyA
	resp, body = e.get(idRunning, appPort, "/headers", frame)
	wantStatus(t, "API key, sibling's iframe", resp, body, 200, "")

	// A browser is told why, and what to do.
	resp, body = e.get(idRunning, appPort, "/", map[string]string{"Cookie": CookieName + "=" + cookie, "Accept": "text/html",
		"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"})
	if resp.StatusCode != refused || !strings.Contains(body, "another preview or site") || !strings.Contains(body, "signed link") || !strings.Contains(body, "HTTPS") {
		t.Fatalf("refusal page: %d\n%s", resp.StatusCode, body)
	}
	if !strings.Contains(e.logs.String(), `"reason":"cookie_refused"`) {
		t.Errorf("the log does not say why:\n%s", e.logs)
	}
	if e.dials == 0 {
		t.Fatal("nothing reached the app")
	}

	// A sibling can set a cookie of the same name for the whole preview
	// domain; it does not shadow the preview's own.
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Cookie": CookieName + "=1.tossed; " + CookieName + "=" + cookie,
		"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"})
	wantStatus(t, "a tossed cookie first", resp, body, 200, "")
	var saw appSaw
	if err := json.Unmarshal([]byte(body), &saw); err != nil || saw.Headers.Get("Cookie") != "" {
		t.Errorf("cookies reached the app: %q (%v)", saw.Headers.Get("Cookie"), err)
	}

	// A page opened with a signed URL over plain HTTP keeps the token in
	// its address, which its requests send as their Referer: the app does
	// not get it.
	resp, body = e.get(idRunning, appPort, "/headers", map[string]string{"Cookie": CookieName + "=" + cookie,
		"Referer": own + "/page?a=1&" + TokenParam + "=" + pu.Query().Get(TokenParam) + "&b=2"})
	wantStatus(t, "Referer with the token", resp, body, 200, "")
	json.Unmarshal([]byte(body), &saw)
	if got := saw.Headers.Get("Referer"); got != own+"/page?a=1&b=2" {
		t.Errorf("the app got Referer %q", got)
	}
}

// TestPlainHTTPWarning: a custom preview domain without an https public
// URL is warned about at start; localhost and HTTPS are not.
func TestPlainHTTPWarning(t *testing.T) {
	for _, tt := range []struct {
		domain, public string
		warn           bool
	}{
		{"localhost", "", false},
		{"preview.localhost", "", false},
		{"localhost", "http://localhost:8080", false},
		{"preview.test", "", true},
		{"preview.test", "http://preview.test:8080", true},
		{"preview.test", "https://preview.test", false},
	} {
		logs := &testutil.Buffer{}
		_, err := New(Config{Domain: tt.domain, PublicURL: tt.public, Key: bytes.Repeat([]byte{1}, KeyBytes),
			Sandboxes: &fakeStore{}, Auth: fakeAuth{}, Tunnels: DialFunc(nil), Log: slog.New(slog.NewJSONHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(logs.String(), "plain HTTP on a custom preview domain"); got != map[bool]int{true: 1}[tt.warn] {
			t.Errorf("domain %s, public URL %q: %d warnings, want warn=%v:\n%s", tt.domain, tt.public, got, tt.warn, logs)
		}
	}
}

// do is get with a method ("" is GET).
func (e *env) do(method, id string, port int, path string, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	if method == "" || method == "GET" {
		return e.get(id, port, path, hdr)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = e.hostHeader(id, port)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// FuzzCookieAllowed: whatever the headers, the cookie never counts for a
// request that shows nothing, one another host's page made, or a frame,
// script or fetch of another origin.
func FuzzCookieAllowed(f *testing.F) {
	const own = "http://3000-01jq3v9x7k2m4n6p8r0s2t4v6w.localhost:7070"
	f.Add("", own+"/a", "", "", "", "GET")
	f.Add(own, "", "same-origin", "cors", "empty", "POST")
	f.Add("null", own, "", "", "", "GET")
	f.Add("", "", "same-site", "navigate", "iframe", "GET")
	f.Add("http://evil.localhost:7070", "", "same-site", "navigate", "document", "GET")
	f.Add("HTTP://3000-01JQ3V9X7K2M4N6P8R0S2T4V6W.LOCALHOST:7070", "", "", "", "", "PUT")
	rt, err := New(Config{Domain: "localhost", Key: bytes.Repeat([]byte{1}, KeyBytes), Sandboxes: &fakeStore{},
		Auth: fakeAuth{}, Tunnels: DialFunc(nil), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, origin, referer, site, mode, dest, method string) {
		h := http.Header{}
		for k, v := range map[string]string{"Origin": origin, "Referer": referer, "Sec-Fetch-Site": site,
			"Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": dest} {
			if v != "" {
				h.Set(k, v)
			}
		}
		r := &http.Request{Method: method, Host: strings.TrimPrefix(own, "http://"), Header: h}
		ok := rt.cookieAllowed(r)
		switch {
		case !ok:
		case site == "" && origin == "" && referer == "":
			t.Fatal("allowed a request that shows nothing")
		case strings.Contains(strings.ToLower(origin), "evil"), origin == "" && strings.Contains(strings.ToLower(referer), "evil"):
			t.Fatalf("allowed Origin %q, Referer %q", origin, referer)
		case site != "" && site != "same-origin" && (dest != "document" || mode != "navigate"):
			t.Fatalf("allowed Sec-Fetch-Site %q, -Mode %q, -Dest %q", site, mode, dest)
		}
	})
}
