package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestFleet: two nodes on one Postgres serve one fleet. A sandbox made
// through either node runs on the node placement chose, and everything
// about it works through either node: exec (whole and streamed), a
// background process's output (SSE and WebSocket), a terminal, files of
// a few MiB, its preview (page, event stream, WebSocket) and an app's
// route. A key revoked on a ends its streams open through b.
func TestFleet(t *testing.T) {
	f := startTwoNodes(t)
	ctx := t.Context()
	// box[n] runs on node n; each was made through the other node.
	box := map[string]api.Sandbox{}
	for _, n := range fleetNodes {
		sb, err := f.nodes[other(n)].client().CreateSandbox(ctx, api.CreateSandboxRequest{NodeLabels: map[string]string{"zone": n}})
		if err != nil {
			t.Fatalf("create through %s for %s: %v", other(n), n, err)
		}
		if sb.Node != n {
			t.Fatalf("created through %s with zone=%s: on node %q", other(n), n, sb.Node)
		}
		if _, err := os.Stat(filepath.Join(f.dirs[n], "sandboxes", "namespace", sb.ID)); err != nil {
			t.Fatalf("sandbox %s of node %s is not in its data directory: %v", sb.ID, n, err)
		}
		box[n] = *sb
	}

	// Every call below goes through each node to each node's sandbox.
	each := func(t *testing.T, call func(t *testing.T, c *client.Client, sb api.Sandbox)) {
		for _, via := range fleetNodes {
			for _, on := range fleetNodes {
				t.Run("via "+via+" on "+on, func(t *testing.T) { call(t, f.nodes[via].client(), box[on]) })
			}
		}
	}
	t.Run("exec", func(t *testing.T) {
		each(t, func(t *testing.T, c *client.Client, sb api.Sandbox) {
			res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo $((6*7)); id -u"}})
			if err != nil || res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "42\n") {
				t.Fatalf("exec: %+v, %v", res, err)
			}
			st, err := c.ExecStream(ctx, sb.ID, api.ExecRequest{Cmd: []string{"seq", "1", "100000"}})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if res, err := st.Copy(&out, io.Discard); err != nil || res.ExitCode != 0 || strings.Count(out.String(), "\n") != 100000 {
				t.Fatalf("exec stream: %d lines, %+v, %v", strings.Count(out.String(), "\n"), res, err)
			}
		})
	})
	t.Run("process output", func(t *testing.T) {
		each(t, func(t *testing.T, c *client.Client, sb api.Sandbox) {
			p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "for i in $(seq 1 3000); do echo line $i; done"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range []client.OutputTransport{client.OutputSSE, client.OutputWebSocket} {
				out, err := followOutput(ctx, c, sb.ID, p.PID, tr)
				if err != nil || strings.Count(out, "\n") != 3000 || !strings.HasSuffix(out, "line 3000\n") {
					t.Fatalf("transport %d: %d lines, %v", tr, strings.Count(out, "\n"), err)
				}
			}
		})
	})
	t.Run("terminal", func(t *testing.T) {
		each(t, func(t *testing.T, c *client.Client, sb api.Sandbox) {
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			term, err := c.OpenTerminal(tctx, sb.ID, client.TerminalOptions{Cmd: []string{"sh"}})
			if err != nil {
				t.Fatal(err)
			}
			defer term.Close()
			if err := term.Input(tctx, []byte("echo $((6*7))x\n")); err != nil {
				t.Fatal(err)
			}
			var seen bytes.Buffer
			for !strings.Contains(seen.String(), "42x") {
				out, err := term.Next(tctx)
				if err != nil {
					t.Fatalf("terminal: %v; saw %q", err, seen.String())
				}
				seen.Write(out.Data)
			}
		})
	})
	t.Run("files", func(t *testing.T) {
		// Written through one node, read back through the other.
		each(t, func(t *testing.T, c *client.Client, sb api.Sandbox) {
			data := make([]byte, 5<<20)
			rand.Read(data)
			name := "big-" + randHex(4)
			if _, err := c.WriteFile(ctx, sb.ID, name, 0o644, bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			for _, n := range fleetNodes {
				got, err := readFile(ctx, f.nodes[n].client(), sb.ID, name)
				if err != nil || got != string(data) {
					t.Fatalf("5 MiB read back through %s: %d bytes, %v", n, len(got), err)
				}
			}
		})
	})
	t.Run("preview", func(t *testing.T) {
		for _, on := range fleetNodes {
			startApp(t, f.nodes[on], newPreview(t, f.nodes[on]), box[on].ID)
			for _, via := range fleetNodes {
				t.Run("via "+via+" on "+on, func(t *testing.T) { checkPreview(t, f.nodes[via], box[on].ID) })
			}
		}
	})
	t.Run("app", func(t *testing.T) {
		a := createApp(t, f.nodes["a"], api.CreateAppRequest{Name: "site", Preset: "static"}, 2*time.Minute)
		c := f.nodes["b"].client()
		for id, who := range map[string]string{a.Live: "live", a.Dev: "dev"} {
			if _, err := c.WriteFile(ctx, id, "/workspace/public/who.txt", 0o644, strings.NewReader(who)); err != nil {
				t.Fatal(err)
			}
		}
		for _, via := range fleetNodes {
			key := map[string]string{"Authorization": "Bearer " + f.nodes[via].key}
			for path, want := range map[string]string{"/who.txt": "live", "/dev/who.txt": "dev"} {
				if st, body, _ := appGet(t, f.nodes[via], "site", path, key); st != 200 || body != want {
					t.Errorf("GET %s on site via %s: %d %.120q, want %q", path, via, st, body, want)
				}
			}
		}
	})
	t.Run("revoke", func(t *testing.T) { checkRevoke(t, f, box) })
}

// followOutput reads process pid's stdout over tr until it exits.
func followOutput(ctx context.Context, c *client.Client, id string, pid int, tr client.OutputTransport) (string, error) {
	st, err := c.ProcessOutputOver(ctx, id, pid, 0, true, tr)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var out strings.Builder
	for {
		ev, err := st.Next()
		if err != nil {
			return out.String(), err
		}
		if ev.Type == api.OutputExit {
			return out.String(), nil
		}
		out.Write(ev.Data)
	}
}

// checkPreview reaches previewapp in sandbox id through node s's preview
// door: a page, an event stream event by event, a WebSocket echo.
func checkPreview(t *testing.T, s *server, id string) {
	p := newPreview(t, s)
	base := p.base(id, appPort)
	key := map[string]string{"Authorization": "Bearer " + s.key}
	resp, body := p.get(base+"/headers", key)
	if resp.StatusCode != 200 || !strings.Contains(body, "X-Forwarded-Host") {
		t.Fatalf("GET /headers: %d %.200s", resp.StatusCode, body)
	}
	resp, body = p.get(base+"/headers", nil)
	p.want("without a key", resp, body, 401, "preview_private")

	req, _ := http.NewRequest("GET", base+"/events?n=5", nil)
	req.Header.Set("Authorization", "Bearer "+s.key)
	er, err := p.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	sc := bufio.NewScanner(er.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events++
		}
	}
	er.Body.Close()
	if er.StatusCode != 200 || events != 5 {
		t.Fatalf("event stream: %d, %d events", er.StatusCode, events)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, wr, err := websocket.Dial(ctx, strings.Replace(base, "http:", "ws:", 1)+"/ws", &websocket.DialOptions{
		HTTPClient: p.hc, HTTPHeader: http.Header{"Authorization": {"Bearer " + s.key}},
	})
	if err != nil {
		t.Fatalf("WebSocket dial: %v (%v)", err, wr)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	for _, m := range []string{"hello", strings.Repeat("x", 100_000)} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		if _, b, err := ws.Read(ctx); err != nil || string(b) != "echo: "+m {
			t.Fatalf("echo of %d bytes: %d bytes, %v", len(m), len(b), err)
		}
	}
	ws.Close(websocket.StatusNormalClosure, "")
}

// checkRevoke: a key's streams open through b, one to each node's
// sandbox, end once the key is revoked through a: on b by the store's
// notice of the revocation, on a by its own.
func checkRevoke(t *testing.T, f *twoNodes, box map[string]api.Sandbox) {
	ctx := t.Context()
	key, err := f.nodes["a"].client().CreateKey(ctx, api.CreateKeyRequest{Name: "fleet-revoke"})
	if err != nil {
		t.Fatal(err)
	}
	viaB := client.New(f.nodes["b"].url, key.Secret)
	ended := map[string]chan time.Time{}
	for _, on := range fleetNodes {
		p, err := viaB.StartProcess(ctx, box[on].ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do echo tick; sleep 0.2; done"}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := viaB.ProcessOutputOver(ctx, box[on].ID, p.PID, 0, true, client.OutputSSE)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Next(); err != nil {
			t.Fatalf("the stream on %s: %v", on, err)
		}
		ch := make(chan time.Time, 1)
		ended[on] = ch
		go func() {
			for {
				if ev, err := st.Next(); err != nil || ev.Type == api.OutputExit {
					ch <- time.Now()
					return
				}
			}
		}()
	}
	revoked := time.Now()
	if err := f.nodes["a"].client().DeleteKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	for _, on := range fleetNodes {
		select {
		case at := <-ended[on]:
			t.Logf("the key's stream through b to %s's sandbox ended %v after the revocation on a", on, at.Sub(revoked).Round(time.Millisecond))
		case <-time.After(10 * time.Second): // a hang guard; the figure is logged above
			t.Errorf("the key's stream through b to %s's sandbox still open 10 s after the revocation on a", on)
		}
	}
	// Both streams ended: b has heard of the revocation (the one to a's
	// sandbox may have ended first, by a's own).
	for _, on := range fleetNodes {
		if _, err := viaB.GetSandbox(ctx, box[on].ID); client.Code(err) != "invalid_api_key" {
			t.Errorf("the revoked key through b on %s's sandbox: %v, want it refused", on, err)
		}
	}
}
