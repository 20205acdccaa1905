package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

// serveJS is a Node server: node serve.js PORT HOST BODY answers every
// request with BODY, listening on HOST as Node resolves it.
const serveJS = `const [port, host, body] = process.argv.slice(2);
require('http').createServer((req, res) => res.end(body)).listen(Number(port), host);
`

// TestPreviewLoopback: previews reach a dev server wherever it listens on
// the sandbox's loopback. Inside a sandbox localhost is ::1 first, so
// Node's listen(port, "localhost") (Vite's default) binds ::1 only; a
// server bound to ::1 explicitly is the same case. Both answer through
// their previews, the port list shows them listening without a setting,
// a set port with nothing on it as not listening, and a closed port is a
// 502.
func TestPreviewLoopback(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPreview(t, s)
	key := map[string]string{"Authorization": "Bearer " + s.key}

	// Where the sandbox's Node puts "localhost".
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"node", "-e", "require('dns').lookup('localhost', (e, a) => console.log(e ? e.message : a))"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("node in the sandbox: %+v, %v", res, err)
	}
	localhost := strings.TrimSpace(res.Stdout)
	t.Logf("in the sandbox, Node resolves localhost to %s", localhost)

	if _, err := c.WriteFile(ctx, sb.ID, "serve.js", 0o644, strings.NewReader(serveJS)); err != nil {
		t.Fatal(err)
	}
	servers := []struct {
		port       int
		host, body string
		addrs      []string // where the port list must show it
	}{
		{5173, "localhost", "vite-like on localhost", []string{localhost}},
		{8000, "::1", "only on ::1", []string{"::1"}},
	}
	for _, sv := range servers {
		if _, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"node", "serve.js", strconv.Itoa(sv.port), sv.host, sv.body}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, sv := range servers {
		waitUntil(t, "the server on "+sv.host+":"+strconv.Itoa(sv.port)+" answers through its preview", func() bool {
			resp, _ := p.get(p.base(sb.ID, sv.port)+"/", key)
			return resp.StatusCode == 200
		})
		resp, body := p.get(p.base(sb.ID, sv.port)+"/", key)
		if resp.StatusCode != 200 || body != sv.body {
			t.Fatalf("preview of %s:%d: %d %q, want 200 %q", sv.host, sv.port, resp.StatusCode, body, sv.body)
		}
	}

	// A port set but closed: through its preview a 502, in the list not
	// listening.
	const closed = 3001
	if _, err := c.SetPortPublic(ctx, sb.ID, closed, false); err != nil {
		t.Fatal(err)
	}
	resp, body := p.get(p.base(sb.ID, closed)+"/", key)
	p.want("closed port", resp, body, 502, "port_closed")
	if want := "(tried 127.0.0.1:3001 and [::1]:3001)"; !strings.Contains(body, want) {
		t.Errorf("the closed port's 502 does not say what was tried (%s): %s", want, body)
	}

	l, err := c.ListPorts(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if l.ListeningError != nil {
		t.Fatalf("the list has no listening state: %+v", l.ListeningError)
	}
	byPort := map[int]api.Port{}
	for _, pt := range l.Ports {
		byPort[pt.Port] = pt
	}
	for _, sv := range servers {
		pt, ok := byPort[sv.port]
		if !ok || pt.Listening == nil || !*pt.Listening || pt.Configured || !slices.Equal(pt.Addresses, sv.addrs) ||
			pt.URL != p.base(sb.ID, sv.port)+"/" {
			t.Errorf("port %d (%s) in the list: %+v, want listening at %v without a setting", sv.port, sv.host, pt, sv.addrs)
		}
	}
	if pt, ok := byPort[closed]; !ok || pt.Listening == nil || *pt.Listening || !pt.Configured || len(pt.Addresses) != 0 {
		t.Errorf("closed port %d in the list: %+v, want set and not listening", closed, pt)
	}
	if pt, ok := byPort[3128]; ok {
		t.Errorf("the egress forwarder's port is listed: %+v", pt)
	}
	if !slices.IsSortedFunc(l.Ports, func(a, b api.Port) int { return a.Port - b.Port }) {
		t.Errorf("the list is not in port order: %+v", l.Ports)
	}

	// A stopped sandbox lists its settings and says why nothing more.
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	l, err = c.ListPorts(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Ports) != 1 || l.Ports[0].Port != closed || l.Ports[0].Listening != nil || l.ListeningError == nil || l.ListeningError.Code != "sandbox_not_running" {
		t.Fatalf("stopped: %+v, %+v", l.Ports, l.ListeningError)
	}
}
