package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/testutil"
)

// appPort is where previewapp listens inside the sandbox.
const appPort = 3000

var (
	previewAppOnce sync.Once
	previewAppBin  []byte
	previewAppErr  error
)

// previewApp is internal/edge/router/testdata/previewapp, built once: a page,
// /headers, an event stream and a WebSocket echo.
func previewApp(t *testing.T) []byte {
	t.Helper()
	previewAppOnce.Do(func() {
		dir, err := testutil.Build("internal/edge/router/testdata/previewapp")
		if err != nil {
			previewAppErr = err
			return
		}
		defer os.RemoveAll(dir)
		previewAppBin, previewAppErr = os.ReadFile(filepath.Join(dir, "previewapp"))
	})
	if previewAppErr != nil {
		t.Fatal(previewAppErr)
	}
	return previewAppBin
}

// preview talks to the previews of one server: every request goes to the
// server's address whatever its host, as a browser resolves *.localhost.
type preview struct {
	t      *testing.T
	s      *server
	port   string // the server's listen port
	domain string // the preview domain, "localhost" unless set
	hc     *http.Client
}

func newPreview(t *testing.T, s *server) *preview {
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host
	hc := &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.Cleanup(hc.CloseIdleConnections)
	return &preview{t: t, s: s, port: u.Port(), domain: "localhost", hc: hc}
}

// base is the preview's origin.
func (p *preview) base(id string, port int) string {
	return "http://" + strconv.Itoa(port) + "-" + id + "." + p.domain + ":" + p.port
}

// get sends GET u with the headers given ("Authorization": key…).
func (p *preview) get(u string, hdr map[string]string) (*http.Response, string) {
	p.t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		p.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (p *preview) want(what string, resp *http.Response, body string, status int, code string) {
	p.t.Helper()
	var e api.Error
	json.Unmarshal([]byte(body), &e)
	if resp.StatusCode != status || code != "" && e.Error.Code != code {
		p.t.Fatalf("%s: %d %s, want %d %s", what, resp.StatusCode, body, status, code)
	}
}

// startApp uploads previewapp into the sandbox, starts it on appPort and
// waits until its preview answers.
func startApp(t *testing.T, s *server, p *preview, id string) {
	t.Helper()
	c := s.client()
	ctx := context.Background()
	if _, err := c.WriteFile(ctx, id, "previewapp", 0o755, bytes.NewReader(previewApp(t))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: []string{"./previewapp", "-addr", "127.0.0.1:" + strconv.Itoa(appPort)}, Tag: "app"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "previewapp answers through its preview", func() bool {
		resp, _ := p.get(p.base(id, appPort)+"/headers", map[string]string{"Authorization": "Bearer " + s.key})
		return resp.StatusCode == http.StatusOK
	})
}

// TestPreview: a program in a sandbox through its preview URL, with a Go
// client: private by default, the key, a signed URL (and its cookie),
// X-Forwarded-*, an event stream that arrives event by event, a WebSocket
// echo, public and private again (also across a restart), a closed port,
// a stopped sandbox.
func TestPreview(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPreview(t, s)
	startApp(t, s, p, sb.ID)
	base := p.base(sb.ID, appPort)
	key := map[string]string{"Authorization": "Bearer " + s.key}

	t.Run("private", func(t *testing.T) {
		resp, body := p.get(base+"/headers", nil)
		p.want("no credentials", resp, body, 401, "preview_private")
		resp, body = p.get(base+"/", map[string]string{"Accept": "text/html"})
		if resp.StatusCode != 401 || !strings.Contains(body, "This preview is private") {
			t.Fatalf("browser without credentials: %d %s", resp.StatusCode, body)
		}
		other, err := c.CreateTenant(ctx, api.CreateTenantRequest{Name: "other"})
		if err != nil {
			t.Fatal(err)
		}
		resp, body = p.get(base+"/headers", map[string]string{"Authorization": "Bearer " + other.Key.Secret})
		p.want("another tenant's key", resp, body, 404, "preview_not_found")
	})

	t.Run("key", func(t *testing.T) {
		resp, body := p.get(base+"/headers?q=1", map[string]string{"Authorization": "Bearer " + s.key, "X-Forwarded-For": "6.6.6.6"})
		p.want("with the key", resp, body, 200, "")
		var saw struct {
			Host    string      `json:"host"`
			URI     string      `json:"uri"`
			Headers http.Header `json:"headers"`
		}
		if err := json.Unmarshal([]byte(body), &saw); err != nil {
			t.Fatal(err)
		}
		h := saw.Headers
		wantHost := strconv.Itoa(appPort) + "-" + sb.ID + ".localhost:" + p.port
		if h.Get("Authorization") != "" || saw.Host != wantHost || saw.URI != "/headers?q=1" ||
			h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Host") != wantHost || h.Get("X-Forwarded-Proto") != "http" {
			t.Fatalf("the app saw %+v", saw)
		}
	})

	t.Run("stream", func(t *testing.T) {
		start := time.Now()
		req, _ := http.NewRequest("GET", base+"/events?n=10", nil)
		req.Header.Set("Authorization", "Bearer "+s.key)
		resp, err := p.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("events: %d %s", resp.StatusCode, ct)
		}
		sc := bufio.NewScanner(resp.Body)
		var at []time.Duration
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				at = append(at, time.Since(start))
			}
		}
		total := time.Since(start)
		if len(at) != 10 || at[0] > total/2 || at[4] > total*3/4 {
			t.Fatalf("events arrived at %v of %s: the stream was buffered", at, total)
		}
	})

	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		ws, resp, err := websocket.Dial(ctx, strings.Replace(base, "http:", "ws:", 1)+"/ws", &websocket.DialOptions{
			HTTPClient: p.hc, HTTPHeader: http.Header{"Authorization": {"Bearer " + s.key}},
		})
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 20)
		for _, m := range []string{"hello", strings.Repeat("x", 100_000)} {
			if err := ws.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
				t.Fatal(err)
			}
			_, b, err := ws.Read(ctx)
			if err != nil || string(b) != "echo: "+m {
				t.Fatalf("echo of %d bytes: %d bytes, %v", len(m), len(b), err)
			}
		}
		ws.Close(websocket.StatusNormalClosure, "")
		// Without credentials the upgrade is refused.
		if _, resp, err := websocket.Dial(ctx, strings.Replace(base, "http:", "ws:", 1)+"/ws", &websocket.DialOptions{HTTPClient: p.hc}); err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("WebSocket without credentials: %v, %v", resp, err)
		}
	})

	t.Run("signed URL", func(t *testing.T) {
		su, err := c.PreviewURL(ctx, sb.ID, appPort, 0)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(su.URL)
		if err != nil || "http://"+u.Host != base || time.Until(su.ExpiresAt) < 59*time.Minute {
			t.Fatalf("signed URL %+v", su)
		}
		resp, body := p.get(su.URL, nil)
		p.want("signed URL", resp, body, 200, "")
		var cookie string
		for _, ck := range resp.Cookies() {
			if ck.Name == "hutch_preview" && ck.HttpOnly && ck.SameSite == http.SameSiteLaxMode {
				cookie = ck.Name + "=" + ck.Value
			}
		}
		if cookie == "" {
			t.Fatalf("no preview cookie in %v", resp.Header["Set-Cookie"])
		}
		// The cookie counts on requests the preview's own pages make
		// (a browser shows it with Fetch Metadata, or an Origin or Referer).
		resp, body = p.get(base+"/headers", map[string]string{"Cookie": cookie})
		p.want("the cookie, from nowhere in particular", resp, body, 403, "preview_cookie_refused")
		resp, body = p.get(base+"/headers", map[string]string{"Cookie": cookie, "Referer": base + "/"})
		p.want("the cookie", resp, body, 200, "")
		if strings.Contains(body, "hutch_preview") || strings.Contains(body, "hutch_token") {
			t.Fatalf("credentials reached the app: %s", body)
		}
		// A WebSocket with the cookie.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(wctx, strings.Replace(base, "http:", "ws:", 1)+"/ws", &websocket.DialOptions{
			HTTPClient: p.hc, HTTPHeader: http.Header{"Cookie": {cookie}, "Origin": {base}},
		})
		if err != nil {
			t.Fatalf("WebSocket with the cookie: %v", err)
		}
		ws.Close(websocket.StatusNormalClosure, "")

		q := u.Query()
		q.Set("hutch_token", q.Get("hutch_token")+"x")
		resp, body = p.get(base+"/?"+q.Encode(), nil)
		p.want("tampered", resp, body, 401, "invalid_preview_token")
		resp, body = p.get(strings.Replace(su.URL, base, p.base(sb.ID, appPort+1), 1), nil)
		p.want("for another port", resp, body, 401, "invalid_preview_token")
		short, err := c.PreviewURL(ctx, sb.ID, appPort, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(short.ExpiresAt) + 100*time.Millisecond)
		resp, body = p.get(short.URL, nil)
		p.want("expired", resp, body, 401, "invalid_preview_token")
	})

	t.Run("public", func(t *testing.T) {
		port, err := c.SetPortPublic(ctx, sb.ID, appPort, true)
		if err != nil || !port.Public || port.URL != base+"/" {
			t.Fatalf("SetPortPublic: %+v, %v", port, err)
		}
		resp, body := p.get(base+"/headers", nil)
		p.want("public", resp, body, 200, "")
		l, err := c.ListPorts(ctx, sb.ID)
		if err != nil || len(l.Ports) != 1 || l.Ports[0].Port != appPort || !l.Ports[0].Public {
			t.Fatalf("ListPorts: %+v, %v", l, err)
		}
		if _, err := c.SetPortPublic(ctx, sb.ID, appPort, false); err != nil {
			t.Fatal(err)
		}
		resp, body = p.get(base+"/headers", nil)
		p.want("private again", resp, body, 401, "preview_private")
	})

	t.Run("closed port", func(t *testing.T) {
		resp, body := p.get(p.base(sb.ID, appPort+1)+"/", key)
		p.want("closed port", resp, body, 502, "port_closed")
		resp, body = p.get(p.base(sb.ID, appPort+1)+"/", map[string]string{"Authorization": "Bearer " + s.key, "Accept": "text/html"})
		if resp.StatusCode != 502 || !strings.Contains(body, "Nothing listens on port 3001") {
			t.Fatalf("closed port, browser: %d %s", resp.StatusCode, body)
		}
	})

	// The public setting outlives a restart of the control plane (the
	// sandbox and its program go on meanwhile).
	if _, err := c.SetPortPublic(ctx, sb.ID, appPort, true); err != nil {
		t.Fatal(err)
	}
	s.stop(false)
	s = startServer(t, s.dataDir)
	p, c = newPreview(t, s), s.client()
	base = p.base(sb.ID, appPort)
	resp, body := p.get(base+"/headers", nil)
	p.want("public after a restart", resp, body, 200, "")
	if _, err := c.SetPortPublic(ctx, sb.ID, appPort, false); err != nil {
		t.Fatal(err)
	}

	// A stopped sandbox: 503 with Retry-After, and a page that reloads
	// itself a bounded number of times.
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	key = map[string]string{"Authorization": "Bearer " + s.key}
	resp, body = p.get(base+"/", key)
	p.want("stopped", resp, body, 503, "sandbox_not_running")
	if resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	resp, body = p.get(base+"/", map[string]string{"Authorization": "Bearer " + s.key, "Accept": "text/html"})
	if resp.StatusCode != 503 || !strings.Contains(body, `<meta http-equiv="refresh" content="2;url=`+base+`/?hutch_retry=1">`) {
		t.Fatalf("the first retry page: %d %s", resp.StatusCode, body)
	}
	resp, body = p.get(base+"/?hutch_retry=10", map[string]string{"Authorization": "Bearer " + s.key, "Accept": "text/html"})
	if resp.StatusCode != 503 || strings.Contains(body, "http-equiv") || !strings.Contains(body, "Gave up") {
		t.Fatalf("the last retry page: %d %s", resp.StatusCode, body)
	}
	resp, body = p.get(base+"/", nil)
	p.want("stopped, no credentials", resp, body, 401, "preview_private")
}

// TestPreviewProcessDriver: the process driver shares the host's network,
// so its sandboxes' ports are not previewed.
func TestPreviewProcessDriver(t *testing.T) {
	s := startServer(t, "", "--driver", "process")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPreview(t, s)
	resp, body := p.get(p.base(sb.ID, appPort)+"/", map[string]string{"Authorization": "Bearer " + s.key})
	p.want("process driver", resp, body, 501, "previews_unsupported")
}

// needBrowser returns node and the system's Chromium, or skips t saying
// what is missing.
func needBrowser(t *testing.T) (node, chromium string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s (apt-get install chromium, or set $CHROMIUM)", chromium)
	}
	if _, err := os.Stat(filepath.Join("browser", "node_modules", "playwright-core")); err != nil {
		t.Skip("playwright-core is not installed: run npm ci in e2e/browser")
	}
	return node, chromium
}

// TestPreviewBrowser: headless Chromium opens a signed preview URL; the
// page's WebSocket echoes and its event stream counts, on the cookie the
// URL left.
func TestPreviewBrowser(t *testing.T) {
	node, chromium := needBrowser(t)
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPreview(t, s)
	startApp(t, s, p, sb.ID)
	su, err := c.PreviewURL(ctx, sb.ID, appPort, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "preview.png")
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, node, "preview.mjs", su.URL, shot)
	cmd.Dir = "browser"
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node preview.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Status  int    `json:"status"`
		URL     string `json:"url"`
		Echo    string `json:"echo"`
		Count   int    `json:"count"`
		Cookies []struct {
			Name     string `json:"name"`
			HTTPOnly bool   `json:"httpOnly"`
			SameSite string `json:"sameSite"`
		} `json:"cookies"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	wantURL := p.base(sb.ID, appPort) + "/"
	if got.Status != 200 || got.URL != wantURL || got.Echo != "echo: hello from the browser" || got.Count < 3 ||
		len(got.Cookies) != 1 || got.Cookies[0].Name != "hutch_preview" || !got.Cookies[0].HTTPOnly || got.Cookies[0].SameSite != "Lax" {
		t.Fatalf("the browser saw %+v (want the page at %s, without its token)", got, wantURL)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Errorf("no screenshot: %v", err)
	}
}
