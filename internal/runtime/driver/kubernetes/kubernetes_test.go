package kubernetes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/drivertest"
	"github.com/hutchdev/hutch/internal/runtime/driver/kubernetes"
	"github.com/hutchdev/hutch/internal/testutil"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestConformance runs the driver conformance suite on the test cluster:
// each sandbox a Pod of the base template's image, reached over the Pod
// network.
func TestConformance(t *testing.T) {
	c := testutil.Kubernetes(t)
	node := "test-" + ids.Token(4)
	dir := t.TempDir()
	drivertest.Run(t, drivertest.Suite{
		New:          func(t *testing.T) driver.Driver { return open(t, c, node, dir) },
		Escape:       true,
		MemoryRlimit: true,
		Skip: map[string]string{
			"SnapshotLinks": "a Pod's /etc holds the kubelet's mounts (hosts, hostname, resolv.conf), which no process of it can remove to make /etc a link; the kubelet, not hutch, writes a Pod's /etc/hostname, and the runtime resolves it inside the container",
		},
		// What a Pod cannot pass here, each reported by the driver or
		// said in docs/KUBERNETES.md.
		SkipEscape: map[string]string{
			"Network":     "a Pod has eth0 by nature, and the test cluster's network plugin does not enforce NetworkPolicies (the driver probes it, reports it degraded and refuses egress policies but public); egress through hutch's proxy is TestEgressStreams",
			"Syscalls":    "RuntimeDefault seccomp allows what a container runtime's default allows (PTRACE_TRACEME among it); hutch's own allowlist would need a Localhost profile on every node",
			"NoHostPaths": "on cgroup v1 without cgroup namespaces a Pod sees its cgroup path (/kubepods/…/pod<uid>/…), and its mount table names the kubelet's directories (here under /root)",
			"AgentProc":   "the agent's mount table names the kubelet's directories (here under /root), as every container's does",
			"Identity":    "without user namespaces (--kubernetes-user-namespaces; containerd 1.6 here has none) a sandbox's root is root on the node (reported degraded), and the user keeps the agent's six capabilities in its bounding set (no_new_privs keeps it from gaining them; dropping them needs CAP_SETPCAP)",
		},
		Leftovers: func(id string) []string {
			var left []string
			sel := metav1.ListOptions{LabelSelector: "hutch.dev/sandbox=" + id}
			pods, err := c.Client.CoreV1().Pods(c.Namespace).List(context.Background(), sel)
			if err != nil {
				return []string{err.Error()}
			}
			for _, p := range pods.Items {
				left = append(left, "pod "+p.Name)
			}
			secrets, err := c.Client.CoreV1().Secrets(c.Namespace).List(context.Background(), sel)
			if err != nil {
				return []string{err.Error()}
			}
			for _, s := range secrets.Items {
				left = append(left, "secret "+s.Name)
			}
			policies, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).List(context.Background(), sel)
			if err != nil {
				return []string{err.Error()}
			}
			for _, p := range policies.Items {
				left = append(left, "networkpolicy "+p.Name)
			}
			return left
		},
	})
}

// TestNetworkPolicy: every sandbox's Pod gets a NetworkPolicy (in, the
// agent's port; out, nothing) made before it and
// deleted with it, and the probe after Open finds that the test
// cluster's bridge plugin does not enforce them, which the driver then
// reports.
func TestNetworkPolicy(t *testing.T) {
	c := testutil.Kubernetes(t)
	d := open(t, c, "test-"+ids.Token(4), t.TempDir())
	ctx := context.Background()
	sp := driver.Spec{SandboxID: ids.New(), Token: ids.Token(32), MaxFileBytes: 1 << 20}
	h, err := d.Create(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, "hutch-"+sp.SandboxID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Spec.Ingress) != 1 || pol.Spec.Ingress[0].Ports[0].Port.IntVal != 49982 || len(pol.Spec.Egress) != 0 ||
		!slices.Contains(pol.Spec.PolicyTypes, "Egress") {
		t.Errorf("the sandbox's NetworkPolicy: %+v", pol.Spec)
	}
	if err := d.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, "hutch-"+sp.SandboxID, metav1.GetOptions{}); err == nil {
		t.Error("the NetworkPolicy outlived its sandbox")
	}

	const ignored = "does not enforce NetworkPolicies (probed)"
	deadline := time.Now().Add(3 * time.Minute)
	for !slices.ContainsFunc(d.Capabilities().Degraded, func(s string) bool { return strings.Contains(s, ignored) }) {
		probing := slices.ContainsFunc(d.Capabilities().Degraded, func(s string) bool { return strings.Contains(s, "is being probed") })
		if !probing || time.Now().After(deadline) {
			t.Fatalf("the driver reports %q; want the probe's finding that the bridge plugin %s", d.Capabilities().Degraded, ignored)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAdopt: a sandbox node a made runs on for node b, which sees its
// Pod as a does; b's Adopt labels its objects b's; a sweep by either
// node keeps a sandbox the store knows, whichever node made it, and
// removes one it does not.
func TestAdopt(t *testing.T) {
	c := testutil.Kubernetes(t)
	want := "test-b-" + ids.Token(4)
	a, b := open(t, c, "test-a-"+ids.Token(4), t.TempDir()), open(t, c, want, t.TempDir())
	ctx := context.Background()
	sp := driver.Spec{SandboxID: ids.New(), Token: ids.Token(32), MaxFileBytes: 1 << 20}
	h, err := a.Create(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Destroy(ctx, h)
	if st, err := b.Recover(ctx, h); err != nil || st.State != driver.Running {
		t.Fatalf("node b's Recover of node a's sandbox = %+v, %v; want running", st, err)
	}
	if err := b.(driver.Adopter).Adopt(ctx, h); err != nil {
		t.Fatal(err)
	}
	name, node := "hutch-"+sp.SandboxID, "hutch.dev/node"
	pod, err := c.Client.CoreV1().Pods(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := c.Client.CoreV1().Secrets(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := c.Client.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[node] != want || sec.Labels[node] != want || pol.Labels[node] != want {
		t.Errorf("after node b's Adopt the labels say %q, %q, %q; want %q", pod.Labels[node], sec.Labels[node], pol.Labels[node], want)
	}
	known := func(id string) bool { return id == sp.SandboxID }
	for _, d := range []driver.Driver{a, b} {
		if removed, err := d.(driver.Sweeper).Sweep(ctx, known); err != nil || len(removed) != 0 {
			t.Fatalf("a sweep of a known sandbox removed %v, %v", removed, err)
		}
	}
	if st, err := a.Status(ctx, h); err != nil || st.State != driver.Running {
		t.Fatalf("after the sweeps the sandbox is %+v, %v; want running", st, err)
	}
	removed, err := a.(driver.Sweeper).Sweep(ctx, func(string) bool { return false })
	if err != nil || !slices.Contains(removed, sp.SandboxID) {
		t.Fatalf("node a's sweep of node b's unknown sandbox removed %v, %v", removed, err)
	}
	if st, err := b.Status(ctx, h); err != nil || st.State != driver.Gone {
		t.Errorf("after the sweep node b finds the sandbox %+v, %v; want gone", st, err)
	}
}

// TestWarmPool: a create of a kind the pool keeps takes a warm Pod: its
// agent, handed the sandbox's envelope, serves the sandbox as its user
// with its environment; the sandbox stops and starts (a Pod of its own
// name then) and its destroy leaves nothing; closing the driver deletes
// the warm Pods no create took.
func TestWarmPool(t *testing.T) {
	c := testutil.Kubernetes(t)
	node := "test-pool-" + ids.Token(4)
	d := openPool(t, c, node, t.TempDir(), 1)
	ctx := context.Background()
	warmPods := func() []string {
		pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "hutch.dev/pool=true,hutch.dev/node=" + node})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range pods.Items {
			if p.Status.Phase == "Running" && p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		return names
	}
	newSpec := func() driver.Spec {
		return driver.Spec{SandboxID: ids.New(), Token: ids.Token(32), MaxFileBytes: 1 << 20, Env: map[string]string{"GREETING": "warm"}}
	}
	// The first create of a kind makes its Pod and starts the pool.
	first := newSpec()
	h1, err := d.Create(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(warmPods()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no warm Pod within 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	sp := newSpec()
	start := time.Now()
	h, err := d.Create(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var st struct{ Pod string }
	if err := json.Unmarshal(h.State, &st); err != nil || !strings.HasPrefix(st.Pod, "hutch-pool-") {
		t.Fatalf("the second create's Pod is %q, %v; want a warm one", st.Pod, err)
	}
	t.Logf("a create from the pool took %v", took)
	run := func(h driver.Handle, cmd ...string) (api.ExecResult, error) {
		a := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token)
		defer a.Close()
		st, err := a.Exec(ctx, api.ExecRequest{Cmd: cmd})
		if err != nil {
			return api.ExecResult{}, err
		}
		return st.Collect()
	}
	res, err := run(h, "sh", "-c", "echo $HUTCH_SANDBOX_ID $GREETING; id -u; echo kept > kept")
	if err != nil || res.Stdout != sp.SandboxID+" warm\n1000\n" {
		t.Fatalf("exec in the claimed Pod = %+v, %v", res, err)
	}
	if err := d.Stop(ctx, h); err != nil {
		t.Fatal(err)
	}
	h2, err := d.Start(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := run(h2, "cat", "kept"); err != nil || res.Stdout != "kept\n" {
		t.Fatalf("after stop and start = %+v, %v", res, err)
	}
	for _, h := range []driver.Handle{h1, h2} {
		if err := d.Destroy(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	sel := metav1.ListOptions{LabelSelector: "hutch.dev/sandbox=" + sp.SandboxID}
	if pods, err := c.Client.CoreV1().Pods(c.Namespace).List(ctx, sel); err != nil || len(pods.Items) != 0 {
		t.Errorf("after the destroy the sandbox's Pods are %d, %v", len(pods.Items), err)
	}
	if secrets, err := c.Client.CoreV1().Secrets(c.Namespace).List(ctx, sel); err != nil || len(secrets.Items) != 0 {
		t.Errorf("after the destroy the sandbox's Secrets are %d, %v", len(secrets.Items), err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if left := warmPods(); len(left) != 0 {
		t.Errorf("warm Pods left after Close: %v", left)
	}
}

// TestEgressStreams: a sandbox's connection to its HTTP proxy (its
// environment's http_proxy, the agent's forwarder on its loopback)
// reaches the control plane's egress listener over the streams the
// control plane keeps open on the agent, though the Pod has no route to
// the control plane; a second listener, as a node that took the sandbox
// over opens, gets the next connection once the first is closed.
func TestEgressStreams(t *testing.T) {
	c := testutil.Kubernetes(t)
	d := open(t, c, "test-"+ids.Token(4), t.TempDir())
	ctx := context.Background()
	h, err := d.Create(ctx, driver.Spec{SandboxID: ids.New(), Token: ids.Token(32), MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Destroy(ctx, h)
	agent := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token, agentclient.Speaking(h.Agent.Info))
	defer agent.Close()
	for _, via := range []string{"first", "second"} {
		ln, err := d.(driver.Egresser).ListenEgress(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				got <- err.Error()
				return
			}
			defer conn.Close()
			req, err := http.ReadRequest(bufio.NewReader(conn))
			if err != nil {
				got <- err.Error()
				return
			}
			got <- req.Method + " " + req.URL.String()
			body := "via " + via + "\n"
			fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		}()
		st, err := agent.Exec(ctx, api.ExecRequest{Cmd: []string{"wget", "-q", "-O-", "http://example.invalid/path"}, TimeoutMS: 30000})
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.Collect()
		if err != nil || res.ExitCode != 0 || res.Stdout != "via "+via+"\n" {
			t.Errorf("wget through the %s listener = %+v, %v", via, res, err)
		}
		ln.Close() // ends a wait for a connection that never came
		if r := <-got; r != "GET http://example.invalid/path" {
			t.Errorf("the %s listener got %q", via, r)
		}
	}
}

// open is a driver on the test cluster's namespace as node, opened, and
// closed when t ends.
func open(t *testing.T, c testutil.Cluster, node, dir string) driver.Driver {
	t.Helper()
	return openPool(t, c, node, dir, 0)
}

// openPool is open with a warm pool of pool Pods per kind.
func openPool(t *testing.T, c testutil.Cluster, node, dir string, pool int) driver.Driver {
	t.Helper()
	d, err := kubernetes.New(driver.Options{
		Dir: dir, AgentPath: filepath.Join(binDir, "hutch-agent"), Node: node, WarmPool: pool,
		Kubernetes: driver.KubernetesOptions{Kubeconfig: c.Kubeconfig, Namespace: c.Namespace, Registry: c.Registry, Required: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}
