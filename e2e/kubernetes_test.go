package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestKubernetes runs hutch serve on the kubernetes driver against the
// test cluster: the Go client's create, exec, files and streams, a
// preview served from inside the Pod, the unmodified E2B SDK's script for
// what the driver does, and a destroy that leaves nothing in the
// namespace.
func TestKubernetes(t *testing.T) {
	cl := testutil.Kubernetes(t)
	ctx := context.Background()
	// A server on the node's address, which a Pod's own route reaches:
	// it counts the requests that reach it.
	nodeIP, err := cl.NodeAddress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })}
	go hs.Serve(ln)
	defer hs.Close()
	egressURL := "http://" + ln.Addr().String() + "/"
	s := startServer(t, "", "--driver", "kubernetes", "--kubeconfig", cl.Kubeconfig,
		"--kubernetes-namespace", cl.Namespace, "--kubernetes-registry", cl.Registry)
	c := s.client()

	info, err := c.Info(ctx)
	if err != nil || info.Driver != "kubernetes" || info.Isolation != api.IsolationDegraded {
		t.Fatalf("info = %+v, %v; want the kubernetes driver, degraded", info, err)
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Env: map[string]string{"GREETING": "hi"}, Limits: &api.Limits{MemoryMB: 128}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Driver != "kubernetes" || sb.State != api.StateRunning {
		t.Fatalf("created %+v", sb)
	}
	pods, err := cl.Client.CoreV1().Pods(cl.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "hutch.dev/sandbox=" + sb.ID})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != "Running" {
		t.Fatalf("the sandbox's Pod: %+v, %v", pods, err)
	}

	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo $GREETING; id -u; echo oops >&2; exit 4"}})
	if err != nil || res.Stdout != "hi\n1000\n" || res.Stderr != "oops\n" || res.ExitCode != 4 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"id", "-u"}, Root: true}); err != nil || res.Stdout != "0\n" {
		t.Fatalf("exec as root = %+v, %v", res, err)
	}
	if _, err := c.WriteFile(ctx, sb.ID, "notes/hello.txt", 0o600, strings.NewReader("hello from the API\n")); err != nil {
		t.Fatal(err)
	}
	if res, _ := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "/workspace/notes/hello.txt"}}); res.Stdout != "hello from the API\n" {
		t.Fatalf("cat of a file the API wrote = %+v", res)
	}
	st, err := c.ExecStream(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo first; sleep 1; echo second"}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if r, err := st.Copy(&out, io.Discard); err != nil || r.ExitCode != 0 || out.String() != "first\nsecond\n" {
		t.Fatalf("stream = %q, %+v, %v", out.String(), r, err)
	}
	st.Close()

	// A server in the Pod, through its preview.
	p := newPreview(t, s)
	startApp(t, s, p, sb.ID)
	resp, body := p.get(p.base(sb.ID, appPort)+"/headers", map[string]string{"Authorization": "Bearer " + s.key})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("preview: %d %s", resp.StatusCode, body)
	}

	// An image template: imported through the API, pushed to the
	// cluster's registry by its first sandbox, the image's user (root) and
	// environment inside.
	importChaosTemplate(t, c)
	fromImage, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: chaosTemplate})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, fromImage.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "id -u; echo $GREETING; pwd"}}); err != nil || res.Stdout != "0\nhello\n/srv\n" {
		t.Fatalf("exec in a sandbox of an image template = %+v, %v; want the image's user, environment and directory", res, err)
	}
	if err := c.DeleteSandbox(ctx, fromImage.ID); err != nil {
		t.Fatal(err)
	}

	// Files outlive a stop and a start (a new Pod of an image of them);
	// a snapshot restores what it took and starts forks of its own.
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := c.StartSandbox(ctx, sb.ID); err != nil || got.State != api.StateRunning {
		t.Fatalf("start after stop = %+v, %v", got, err)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "notes/hello.txt"}}); err != nil || res.Stdout != "hello from the API\n" {
		t.Fatalf("a file after stop and start = %+v, %v", res, err)
	}
	snap, err := c.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "rm notes/hello.txt && echo later > later.txt"}}); err != nil {
		t.Fatal(err)
	}
	forks, err := c.Fork(ctx, sb.ID, api.ForkRequest{Count: 2})
	if err != nil || len(forks.Sandboxes) != 2 {
		t.Fatalf("fork = %+v, %v", forks, err)
	}
	for _, f := range forks.Sandboxes {
		if res, err := c.Exec(ctx, f.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "cat later.txt; ls notes; hostname"}}); err != nil || res.Stdout != "later\n"+f.ID+"\n" {
			t.Fatalf("a fork's files = %+v, %v; want the sandbox's as forked, under the fork's own name", res, err)
		}
		if err := c.DeleteSandbox(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Restore(ctx, sb.ID, api.RestoreRequest{Snapshot: snap.ID}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "cat notes/hello.txt; ls later.txt 2>&1"}}); err != nil || !strings.HasPrefix(res.Stdout, "hello from the API\nls: later.txt: No such file") {
		t.Fatalf("after a restore = %+v, %v; want the snapshot's files", res, err)
	}
	// Egress goes through hutch's proxy, carried by the agent, and its
	// policy holds: public egress does not reach the node's address,
	// which the Pod's own route would (TestEgressStreams in the driver's
	// tests shows the bytes of an allowed connection).
	res, err = c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"wget", "-q", "-O-", egressURL}, TimeoutMS: 30000})
	if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, "403") || hits.Load() != 0 {
		t.Fatalf("wget %s = %+v, %v (%d requests reached it); want the proxy's 403 for a private address", egressURL, res, err, hits.Load())
	}
	// The test cluster does not enforce NetworkPolicies, so a process
	// that ignores the proxy could go around a policy: no egress policy
	// but public is taken, at create or later.
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Network: &api.NetworkPolicy{Egress: api.EgressNone}}); client.Code(err) != "network_policy_unsupported" {
		t.Fatalf("a create with egress none: %v; want network_policy_unsupported", err)
	}
	if _, err := c.SetNetwork(ctx, sb.ID, api.NetworkPolicy{Egress: api.EgressNone}); client.Code(err) != "network_policy_unsupported" {
		t.Fatalf("egress none set on a running sandbox: %v; want network_policy_unsupported", err)
	}

	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sandbox's Pod and Secret gone", 30*time.Second, func() bool {
		sel := metav1.ListOptions{LabelSelector: "hutch.dev/sandbox=" + sb.ID}
		pods, err1 := cl.Client.CoreV1().Pods(cl.Namespace).List(ctx, sel)
		secrets, err2 := cl.Client.CoreV1().Secrets(cl.Namespace).List(ctx, sel)
		return err1 == nil && err2 == nil && len(pods.Items) == 0 && len(secrets.Items) == 0
	})

	// The unmodified E2B SDK: everything but pause and metrics, which
	// the driver does not do.
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat("e2b/node_modules/e2b"); err != nil {
		t.Skip("the E2B SDK is not installed: run npm ci in e2e/e2b (CI does)")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "--test-name-pattern=Sandbox:|commands|files|pty|snapshots|envd", "compat.test.mjs")
	cmd.Dir = "e2b"
	cmd.Env = append(os.Environ(), "E2B_API_URL="+s.url+"/e2b", "E2B_SANDBOX_URL="+s.url+"/e2b/envd", "E2B_API_KEY="+s.key)
	e2bOut, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(e2bOut), "pass 10") {
		t.Fatalf("node --test compat.test.mjs: %v\n%s", err, e2bOut)
	}
	page, err := c.ListSandboxes(context.Background(), client.ListOptions{State: api.StateRunning})
	if err != nil || len(page.Sandboxes) > 0 {
		t.Errorf("the script left sandboxes running: %+v, %v", page, err)
	}
}
