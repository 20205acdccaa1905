package router

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/store"
)

func (e *env) dialCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dials
}

// TestTunnelReuse: a page's requests share a pooled tunnel; a tunnel the
// app closed while it was idle is replaced without the request failing; an
// answer that ends with its connection, one cut short and one whose head
// is too long each cost their tunnel, and the next request goes on.
func TestTunnelReuse(t *testing.T) {
	e := newEnv(t)
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
	do := func(method, path string) (*http.Response, string) {
		t.Helper()
		return e.do(method, idRunning, appPort, path, nil)
	}
	want := func(what string, dials int) {
		t.Helper()
		if n := e.dialCount(); n != dials {
			t.Fatalf("%s: %d tunnels dialled, want %d", what, n, dials)
		}
	}
	for range 3 {
		for _, m := range []string{"GET", "HEAD", "OPTIONS"} {
			resp, body := do(m, "/page")
			wantStatus(t, m, resp, body, 200, "")
			if m == "GET" && len(body) != 1024 {
				t.Fatalf("GET /page: %d bytes", len(body))
			}
		}
	}
	want("nine requests, one at a time", 1)

	resp, body := do("GET", "/closing")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("/closing: %d %q", resp.StatusCode, body)
	}
	resp, body = do("GET", "/page")
	wantStatus(t, "after the app closed the idle tunnel", resp, body, 200, "")
	want("a tunnel closed while idle", 2)

	resp, body = do("GET", "/unbounded")
	if resp.StatusCode != 200 || body != "hello" {
		t.Fatalf("/unbounded: %d %q", resp.StatusCode, body)
	}
	resp, body = do("GET", "/page")
	wantStatus(t, "after a body that ended with its connection", resp, body, 200, "")
	want("a body that ended with its connection", 3)

	resp, body = do("GET", "/bighead")
	wantStatus(t, "a head too long", resp, body, 502, "bad_gateway")
	resp, body = do("GET", "/page")
	wantStatus(t, "after a head too long", resp, body, 200, "")
	want("a head too long", 4)

	// A stream the client leaves after its first event.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/events", nil)
	req.Host = e.hostHeader(idRunning, appPort)
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: 1"))
	if _, err := io.ReadFull(sresp.Body, first); err != nil || string(first) != "data: 1" {
		t.Fatalf("first event %q, %v", first, err)
	}
	cancel()
	sresp.Body.Close()
	for range 2 {
		resp, body = do("GET", "/page")
		wantStatus(t, "after a stream left early", resp, body, 200, "")
	}

	// A body goes the other way (http.Transport's pool).
	req, _ = http.NewRequest("POST", e.srv.URL+"/echo", strings.NewReader("a body"))
	req.Host = e.hostHeader(idRunning, appPort)
	presp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if presp.StatusCode != 200 || string(b) != "a body" {
		t.Fatalf("POST /echo: %d %q", presp.StatusCode, b)
	}
}

// TestTunnelEarlyHints: a 1xx answer reaches the client before the answer.
func TestTunnelEarlyHints(t *testing.T) {
	e := newEnv(t)
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
	var got []string
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			got = append(got, http.StatusText(code)+": "+h.Get("Link"))
			return nil
		},
	})
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/hints", nil)
	req.Host = e.hostHeader(idRunning, appPort)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "page" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if len(got) != 1 || got[0] != "Early Hints: </a.css>; rel=preload" {
		t.Fatalf("1xx answers: %q", got)
	}
}

// TestTunnelsIdleClosed: a tunnel idle for idleTunnelAfter is closed, and
// Close closes the idle tunnels.
func TestTunnelsIdleClosed(t *testing.T) {
	e := newEnv(t)
	e.st.SetPort(context.Background(), &store.PortSetting{SandboxID: idRunning, Port: appPort, Public: true})
	tr := e.rt.tr
	idle := func() int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.nIdle
	}
	get := func() {
		t.Helper()
		resp, body := e.get(idRunning, appPort, "/page", nil)
		wantStatus(t, "GET", resp, body, 200, "")
	}
	get()
	if n := idle(); n != 1 {
		t.Fatalf("%d idle tunnels, want 1", n)
	}
	tr.mu.Lock()
	for _, l := range tr.idle {
		for _, tn := range l {
			tn.idleAt = tn.idleAt.Add(-idleTunnelAfter)
		}
	}
	tr.mu.Unlock()
	tr.closeStale()
	if n := idle(); n != 0 {
		t.Fatalf("%d idle tunnels after idleTunnelAfter, want 0", n)
	}
	get()
	if n := e.dialCount(); n != 2 {
		t.Fatalf("%d tunnels dialled, want 2", n)
	}
	e.rt.Close()
	if n := idle(); n != 0 {
		t.Fatalf("%d idle tunnels after Close", n)
	}
}
