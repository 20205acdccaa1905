package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestEgress: a sandbox reaches out only through the egress proxy, under
// its policy: the npm registry under an allowlist naming it, nothing under
// none; a server on the host's loopback only when the operator allows the
// range and the allowlist names it; never the metadata address or a name
// resolving to loopback; a change applies to the next connection.
func TestEgress(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace", "--egress-allow-private", "127.0.0.0/8")
	c := s.client()
	ctx := context.Background()

	host := startHostServer(t)
	port := host.Addr().(*net.TCPAddr).Port

	// The npm registry, named by an allowlist: a real install.
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Network: &api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"registry.npmjs.org"}}})
	if err != nil {
		t.Fatal(err)
	}
	install := api.ExecRequest{Cmd: []string{"npm", "install", "--no-audit", "--no-fund", "--no-update-notifier", "is-number@7.0.0"}, TimeoutMS: 120_000}
	res, err := c.Exec(ctx, sb.ID, install)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("npm install under an allowlist naming the registry: %+v, %v", res, err)
	}
	if res, _ := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"node", "-e", "console.log(require('is-number')(5))"}}); res == nil || res.Stdout != "true\n" {
		t.Fatalf("the installed package: %+v", res)
	}
	// The same under none fails.
	if _, err := c.SetNetwork(ctx, sb.ID, api.NetworkPolicy{Egress: api.EgressNone}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"rm", "-rf", "node_modules", "/home/user/.npm"}}); err != nil {
		t.Fatal(err)
	}
	install.Cmd = append(install.Cmd, "--fetch-retries=0")
	if res, err := c.Exec(ctx, sb.ID, install); err != nil || res.ExitCode == 0 {
		t.Fatalf("npm install under none succeeded: %+v, %v", res, err)
	}

	// The host's loopback: through the proxy explicitly (NO_PROXY keeps
	// the sandbox's own loopback direct).
	curl := func(url string) string {
		t.Helper()
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "", "-x", "http://127.0.0.1:3128", url}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout
	}
	target := fmt.Sprintf("http://127.0.0.1:%d/", port)
	for _, p := range []api.NetworkPolicy{{Egress: api.EgressPublic}, {Egress: api.EgressAllowlist, Allow: []string{"registry.npmjs.org"}}} {
		if _, err := c.SetNetwork(ctx, sb.ID, p); err != nil {
			t.Fatal(err)
		}
		if got := curl(target); got != "403" {
			t.Fatalf("host loopback under %+v: %s, want 403", p, got)
		}
	}
	if _, err := c.SetNetwork(ctx, sb.ID, api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"127.0.0.1", "169.254.169.254", "localhost"}}); err != nil {
		t.Fatal(err)
	}
	if got := curl(target); got != "200" {
		t.Fatalf("host loopback allowed by the operator and named: %s, want 200", got)
	}
	if got := curl("http://169.254.169.254/latest/meta-data/"); got != "403" {
		t.Fatalf("the metadata address: %s, want 403", got)
	}
	if _, err := c.SetNetwork(ctx, sb.ID, api.NetworkPolicy{Egress: api.EgressPublic}); err != nil {
		t.Fatal(err)
	}
	if got := curl(fmt.Sprintf("http://localhost:%d/", port)); got != "403" {
		t.Fatalf("a name resolving to loopback under public: %s, want 403", got)
	}
	n, err := c.Network(ctx, sb.ID)
	if err != nil || n.Allowed == 0 || n.Denied < 5 || n.BytesIn == 0 || n.Policy.Egress != api.EgressPublic {
		t.Fatalf("network = %+v, %v", n, err)
	}
	evs, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventEgressDenied}})
	if err != nil || len(evs.Events) == 0 || !strings.Contains(evs.Events[0].Message, "denied") {
		t.Fatalf("egress.denied events = %+v, %v", evs, err)
	}
}

// startHostServer serves 200 on the host's loopback.
func startHostServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("host")) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln
}
