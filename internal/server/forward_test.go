package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/server/config"
)

// TestForwardAcrossNodes: a sandbox node a runs works through node b's
// API as through a's own: exec (binary frames and NDJSON), a long output
// stream (SSE and WebSocket), a terminal, and a file of a few MiB up and
// down. What node a receives from b carries the key's id, never the
// key; a forged hop is refused; and once a stops, b answers
// node_unavailable within the dial bound.
func TestForwardAcrossNodes(t *testing.T) {
	f := startFleet(t, nil)
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)
	// Placement: a has the most memory room; only b has zone=b.
	sb, err := viaB.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Node != "a" {
		t.Fatalf("created through b on node %q, want a (the most room)", sb.Node)
	}
	onB, err := viaA.CreateSandbox(ctx, api.CreateSandboxRequest{NodeLabels: map[string]string{"zone": "b"}})
	if err != nil || onB.Node != "b" {
		t.Fatalf("created through a with zone=b: %+v, %v; want node b", onB, err)
	}
	// A sandbox outlives its server; these go with the test (a's is
	// stopped before a is, below).
	t.Cleanup(func() { viaB.DeleteSandbox(ctx, onB.ID); viaA.DeleteSandbox(ctx, sb.ID) })
	_, err = viaA.CreateSandbox(ctx, api.CreateSandboxRequest{NodeLabels: map[string]string{"zone": "nowhere"}})
	if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.Code != "no_node_available" {
		t.Fatalf("a label no node has: %v, want no_node_available", err)
	}

	t.Run("exec", func(t *testing.T) {
		res, err := viaB.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo hello from $0", "a"}})
		if err != nil || res.Stdout != "hello from a\n" {
			t.Fatalf("exec through b: %+v, %v", res, err)
		}
	})
	t.Run("exec stream", func(t *testing.T) {
		st, err := viaB.ExecStream(ctx, sb.ID, api.ExecRequest{Cmd: []string{"seq", "1", "200000"}})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		res, err := st.Copy(&out, io.Discard)
		if err != nil || res.ExitCode != 0 || strings.Count(out.String(), "\n") != 200000 {
			t.Fatalf("binary exec stream through b: %d lines, %+v, %v", strings.Count(out.String(), "\n"), res, err)
		}
	})
	t.Run("exec ndjson", func(t *testing.T) {
		body, _ := json.Marshal(api.ExecRequest{Cmd: []string{"seq", "1", "1000"}})
		req, _ := http.NewRequest("POST", "http://"+f.b.Addr().String()+"/v1/sandboxes/"+sb.ID+"/exec/stream", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+f.admin)
		req.Header.Set("Accept", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "application/x-ndjson") {
			t.Fatalf("NDJSON exec through b: %d %s", resp.StatusCode, ct)
		}
		var stdout strings.Builder
		sc := bufio.NewScanner(resp.Body)
		exit := false
		for sc.Scan() {
			var ev api.ExecEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatal(err)
			}
			stdout.Write(ev.Data)
			exit = exit || ev.Type == "exit"
		}
		if !exit || strings.Count(stdout.String(), "\n") != 1000 {
			t.Fatalf("NDJSON exec through b: exit %v, %d lines", exit, strings.Count(stdout.String(), "\n"))
		}
	})
	t.Run("output streams", func(t *testing.T) {
		p, err := viaB.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "for i in $(seq 1 2000); do echo line $i; done"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range []client.OutputTransport{client.OutputSSE, client.OutputWebSocket} {
			st, err := viaB.ProcessOutputOver(ctx, sb.ID, p.PID, 0, true, tr)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			for {
				ev, err := st.Next()
				if err != nil {
					t.Fatalf("transport %d: %v after %d bytes", tr, err, out.Len())
				}
				if ev.Type == "exit" {
					break
				}
				out.Write(ev.Data)
			}
			st.Close()
			if !strings.HasSuffix(out.String(), "line 2000\n") || strings.Count(out.String(), "\n") != 2000 {
				t.Fatalf("transport %d through b: %d lines", tr, strings.Count(out.String(), "\n"))
			}
		}
	})
	t.Run("terminal", func(t *testing.T) {
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		term, err := viaB.OpenTerminal(tctx, sb.ID, client.TerminalOptions{Cmd: []string{"sh"}})
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
				t.Fatalf("terminal through b: %v; saw %q", err, seen.String())
			}
			seen.Write(out.Data)
		}
	})
	t.Run("files", func(t *testing.T) {
		data := make([]byte, 6<<20)
		rand.Read(data)
		if _, err := viaB.WriteFile(ctx, sb.ID, "big.bin", 0o644, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		rc, err := viaB.ReadFile(ctx, sb.ID, "big.bin")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("6 MiB through b: read %d bytes back, %v", len(got), err)
		}
	})
	t.Run("preview", func(t *testing.T) {
		// The process driver gives no sandbox a network of its own:
		// node a's answer, 501 previews_unsupported, is what a preview
		// forwarded there gets, whether b let it in by key or by a URL
		// that a signed (every node of a fleet checks the others').
		host := "3000-" + sb.ID + ".localhost"
		u, err := viaB.PreviewURL(ctx, sb.ID, 3000, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		pu, err := url.Parse(u.URL)
		if err != nil {
			t.Fatal(err)
		}
		for name, tc := range map[string]struct {
			query, key string
			status     int
			code       string
		}{
			"by key":        {key: f.admin, status: 501, code: "previews_unsupported"},
			"by signed URL": {query: pu.RawQuery, status: 501, code: "previews_unsupported"},
			"without":       {status: 401, code: "preview_private"},
		} {
			req, _ := http.NewRequest("GET", "http://"+f.b.Addr().String()+"/?"+tc.query, nil)
			req.Host = host
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e api.Error
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != tc.status || e.Error.Code != tc.code {
				t.Errorf("preview %s through b: %d %s, want %d %s", name, resp.StatusCode, e.Error.Code, tc.status, tc.code)
			}
		}
		if !strings.Contains(f.tap.saw(), "Host: "+host) {
			t.Error("no preview request reached node a")
		}
	})
	t.Run("the key stays on b", func(t *testing.T) {
		id, secret, _ := auth.ParseKey(f.admin)
		saw := f.tap.saw()
		if !strings.Contains(saw, "Hutch-Forward-Key-Id: "+id) {
			t.Fatal("node a received no hop naming the key id")
		}
		if strings.Contains(saw, secret) || strings.Contains(saw, "Authorization") {
			t.Fatal("node a received the client's key")
		}
	})
	t.Run("forged hop", func(t *testing.T) {
		id, _, _ := auth.ParseKey(f.admin)
		for name, sig := range map[string]string{"forged": "AAAA", "missing": ""} {
			req, _ := http.NewRequest("GET", "http://"+f.a.Addr().String()+"/v1/sandboxes/"+sb.ID+"/files/list?path=/", nil)
			req.Header.Set("Hutch-Forward-Key-Id", id)
			req.Header.Set("Hutch-Forward-From", "b")
			req.Header.Set("Hutch-Forward-To", "a")
			req.Header.Set("Hutch-Forward-Time", "1")
			req.Header.Set("Hutch-Forward-Nonce", "n")
			if sig != "" {
				req.Header.Set("Hutch-Forward-Signature", sig)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e api.Error
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != 401 || e.Error.Code != "forward_unauthorized" {
				t.Errorf("%s signature: %d %s, want 401 forward_unauthorized", name, resp.StatusCode, e.Error.Code)
			}
		}
	})
	t.Run("both ways", func(t *testing.T) {
		res, err := viaA.Exec(ctx, onB.ID, api.ExecRequest{Cmd: []string{"echo", "on b"}})
		if err != nil || res.Stdout != "on b\n" {
			t.Fatalf("exec through a on b's sandbox: %+v, %v", res, err)
		}
	})
	t.Run("revoked on a", func(t *testing.T) {
		k, err := viaA.CreateKey(ctx, api.CreateKeyRequest{Name: "doomed", Role: api.RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		member := client.New("http://"+f.b.Addr().String(), k.Secret)
		p, err := member.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do echo tick; sleep 0.05; done"}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := member.ProcessOutput(ctx, sb.ID, p.PID, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Next(); err != nil {
			t.Fatal(err)
		}
		if err := viaA.DeleteKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		for {
			if _, err := st.Next(); err != nil {
				break
			}
		}
		if d := time.Since(revoked); d > time.Second {
			t.Fatalf("the stream forwarded through b ended %v after the key was revoked on a", d)
		}
		viaA.SignalProcess(ctx, sb.ID, p.PID, "KILL", true)
	})
	t.Run("owner stopped", func(t *testing.T) {
		if _, err := viaB.StopSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		f.a.Shutdown(ctx)
		start := time.Now()
		_, err := viaB.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code != "node_unavailable" || ce.StatusCode != 503 {
			t.Fatalf("exec through b with a stopped: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("node_unavailable after %v", d)
		}
	})
}

// TestForwardPreview: a program in a sandbox node a runs answers its
// preview through node b, by key and by a signed URL, a streamed
// response included (namespace driver: root).
func TestForwardPreview(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the namespace driver needs root")
	}
	f := startFleet(t, func(node string, cfg *config.Config) {
		cfg.Driver, cfg.CgroupParent = "namespace", "hutch-fwdtest-"+node
		t.Cleanup(func() { // after the node's shutdown, registered after this
			dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + cfg.CgroupParent)
			for _, d := range dirs {
				os.Remove(d)
			}
		})
	})
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)
	sb, err := viaB.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { viaA.DeleteSandbox(ctx, sb.ID) })
	if sb.Node != "a" {
		t.Fatalf("placed on %q, want a", sb.Node)
	}
	page := strings.Repeat("preview through b\n", 1<<14)
	if _, err := viaB.WriteFile(ctx, sb.ID, "www/index.html", 0o644, strings.NewReader(page)); err != nil {
		t.Fatal(err)
	}
	if _, err := viaB.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"busybox", "httpd", "-f", "-p", "127.0.0.1:3000", "-h", "www"}}); err != nil {
		t.Fatal(err)
	}
	u, err := viaB.PreviewURL(ctx, sb.ID, 3000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(u.URL)
	if err != nil {
		t.Fatal(err)
	}
	get := func(query, key string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+f.b.Addr().String()+"/index.html?"+query, nil)
		req.Host = "3000-" + sb.ID + ".localhost"
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		status, body := get("", f.admin)
		if status == 200 && body == page {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("preview by key through b: %d %.200s", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status, body := get(pu.RawQuery, ""); status != 200 || body != page {
		t.Fatalf("preview by a signed URL through b: %d %.200s", status, body)
	}
}
