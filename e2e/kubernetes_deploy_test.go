package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// The namespaces deploy/kubernetes makes.
const (
	deployNamespace   = "hutch"
	sandboxNamespace  = "hutch-sandboxes"
	deploySelector    = "app.kubernetes.io/name=hutch"
	deployReadyWithin = 4 * time.Minute
	// adoptWithin bounds how long a deleted replica's sandboxes are
	// unanswered: its heartbeat's silence (store.LostAfter, 10 s), the
	// fleet lease's TTL when it held it (10 s), a sweep's period, and a
	// loaded machine's slack.
	adoptWithin = 60 * time.Second
)

// TestKubernetesDeploy applies deploy/kubernetes to the test cluster, as
// an operator would, with only what this cluster needs changed (an
// overlay: the image, the registry, the Postgres, and the API server's
// address, for the test cluster has no kube-proxy): two replicas over
// Postgres come up Ready. Clients then create sandboxes and write files
// through both replicas while one replica's Pod is deleted: every call
// that was acknowledged still holds afterwards (each sandbox created is
// there and running, each file written reads back), and the deleted
// replica's sandboxes are taken over by the other and answer again.
func TestKubernetesDeploy(t *testing.T) {
	cl := testutil.Kubernetes(t)
	ctx := context.Background()
	node, err := cl.NodeAddress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Client.CoreV1().Namespaces().Get(ctx, deployNamespace, metav1.GetOptions{}); err == nil {
		t.Fatalf("namespace %s exists already: this test deploys hutch there and removes it", deployNamespace)
	}

	// What the Pods reach on the host, through the node's address.
	rc, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	apiURL, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	apiRelay := testutil.Relay(t, net.JoinHostPort(node, "0"), apiURL.Host)
	pgURL, err := url.Parse(testutil.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	pgURL.Host = testutil.Relay(t, net.JoinHostPort(node, "0"), pgURL.Host)
	_, apiPort, _ := net.SplitHostPort(apiRelay)

	image, err := testutil.PushImage(ctx, cl.Registry, "hutch/hutch", v1.Config{
		Entrypoint: []string{"/usr/local/bin/hutch"}, User: "65532:65532",
	}, map[string]string{
		"/usr/local/bin/hutch": filepath.Join(binDir, "hutch"), "/usr/local/bin/hutch-agent": filepath.Join(binDir, "hutch-agent"),
		// The driver's base template is a static busybox.
		"/bin/busybox": "/bin/busybox",
	})
	if err != nil {
		t.Fatal(err)
	}
	name, digest, _ := strings.Cut(image, "@")
	out, err := exec.Command(filepath.Join(binDir, "hutch"), "key", "generate").Output()
	if err != nil {
		t.Fatalf("hutch key generate: %v", err)
	}
	admin := strings.TrimSpace(string(out))
	t.Logf("admin key %s…", admin[:15])
	overlay := writeOverlay(t, overlayConfig{
		image: name, digest: digest, registry: cl.Registry, storeURL: pgURL.String(), admin: admin,
		apiHost: node, apiPort: apiPort,
	})

	kubectl := func(args ...string) error {
		cmd := exec.Command(cl.Kubectl(), append([]string{"--kubeconfig", cl.Kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	start := time.Now()
	if err := kubectl("apply", "-k", overlay); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeDeploy(t, cl, kubectl, overlay) })
	eventuallyDo(t, deployReadyWithin, "two replicas Ready", func() error {
		if crashed := restarted(ctx, cl); crashed != "" {
			t.Fatalf("replica %s restarted before it was Ready", crashed)
		}
		if ips := replicas(ctx, cl, ""); len(ips) != 2 {
			return fmt.Errorf("%d replicas Ready", len(ips))
		}
		return nil
	})
	t.Logf("two replicas Ready %v after kubectl apply", time.Since(start).Round(time.Second))

	ld := &deployLoad{cl: cl, admin: admin}
	first := ld.client(ctx)
	info, err := first.Info(ctx)
	if err != nil || info.Driver != "kubernetes" || len(info.Drivers) != 1 || !info.Drivers[0].Loaded {
		t.Fatalf("info = %+v, %v; want the kubernetes driver alone", info, err)
	}

	// Load through both replicas, then one replica's Pod deleted under it.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() { ld.run(ctx, w, stop) })
	}
	victim := ""
	eventuallyDo(t, 3*time.Minute, "sandboxes acknowledged on both replicas", func() error {
		owners := ld.owners()
		if len(owners) < 2 {
			return fmt.Errorf("sandboxes on %d replicas", len(owners))
		}
		for o := range owners {
			victim = o
		}
		return nil
	})
	deleted := time.Now()
	if err := cl.Client.CoreV1().Pods(deployNamespace).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted replica %s, which ran %d sandboxes", victim, ld.owners()[victim])
	eventuallyDo(t, adoptWithin, "the deleted replica's sandboxes answering through another", func() error {
		return ld.allAnswer(ctx, victim)
	})
	t.Logf("every sandbox of the deleted replica answered again %v after its Pod's deletion", time.Since(deleted).Round(time.Second))
	time.Sleep(3 * time.Second) // more load on the survivors and the replacement
	close(stop)
	wg.Wait()

	// Nothing acknowledged is lost.
	c := ld.client(ctx)
	sandboxes, writes := ld.acked()
	if len(sandboxes) == 0 || len(writes) == 0 {
		t.Fatalf("the load acknowledged %d creates and %d writes", len(sandboxes), len(writes))
	}
	for id := range sandboxes {
		sb, err := c.GetSandbox(ctx, id)
		if err != nil || sb.State != api.StateRunning || sb.Node == victim {
			t.Errorf("acknowledged sandbox %s: %+v, %v; want running on a live replica", id, sb, err)
		}
	}
	for _, w := range writes {
		got, err := readAll(ctx, c, w.sandbox, w.path)
		if err != nil || got != w.body {
			t.Errorf("acknowledged write %s:%s reads %q, %v; want %q", w.sandbox, w.path, got, err, w.body)
		}
	}
	t.Logf("%d creates and %d writes acknowledged, all found; %d calls refused or failed on the way (retried)",
		len(sandboxes), len(writes), ld.failures())
	for id := range sandboxes {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Errorf("destroy %s: %v", id, err)
		}
	}
	pods, err := cl.Client.CoreV1().Pods(sandboxNamespace).List(ctx, metav1.ListOptions{LabelSelector: "hutch.dev/sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		// The probe's, and the replicas' warm Pods, are no sandbox's.
		if p.Labels["hutch.dev/probe"] == "" && p.Labels["hutch.dev/pool"] == "" {
			t.Errorf("Pod %s outlived its sandbox", p.Name)
		}
	}
}

// overlayConfig is what writeOverlay changes in deploy/kubernetes.
type overlayConfig struct {
	image, digest, registry, storeURL, admin string
	apiHost, apiPort                         string
}

// writeOverlay writes a kustomization over deploy/kubernetes with the
// test's image, registry, Postgres, admin key and API server address.
func writeOverlay(t *testing.T, o overlayConfig) string {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs("../deploy/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: ghcr.io/hutchdev/hutch
    newName: %s
    digest: %s
secretGenerator:
  - name: hutch
    namespace: hutch
    options: {disableNameSuffixHash: true}
    literals:
      - HUTCH_STORE_URL=%s
      - HUTCH_SECRETS_KEY=%s
      - HUTCH_CLUSTER_KEY=%s
      - HUTCH_ADMIN_KEY=%s
patches:
  - patch: |-
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: hutch, namespace: hutch}
      data:
        HUTCH_KUBERNETES_REGISTRY: "%s"
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: hutch, namespace: hutch}
      spec:
        template:
          spec:
            containers:
              - name: hutch
                env:
                  - {name: KUBERNETES_SERVICE_HOST, value: "%s"}
                  - {name: KUBERNETES_SERVICE_PORT, value: "%s"}
                  - {name: HUTCH_LOG_LEVEL, value: debug}
`, base, o.image, o.digest, o.storeURL, randomKey(t), randomKey(t), o.admin, o.registry, o.apiHost, o.apiPort)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// randomKey is 32 random bytes in hex, as $HUTCH_SECRETS_KEY and
// $HUTCH_CLUSTER_KEY take them.
func randomKey(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 32)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// removeDeploy deletes what the overlay made, and waits for the
// sandboxes' namespace to be gone, the Pods in it with it.
func removeDeploy(t *testing.T, cl testutil.Cluster, kubectl func(...string) error, overlay string) {
	if t.Failed() {
		for _, p := range replicasAll(context.Background(), cl) {
			out, _ := exec.Command(cl.Kubectl(), "--kubeconfig", cl.Kubeconfig, "-n", deployNamespace, "logs", "--tail", "60", p).CombinedOutput()
			t.Logf("replica %s's log:\n%s", p, out)
		}
	}
	if err := kubectl("delete", "-k", overlay, "--wait=true", "--timeout=3m"); err != nil {
		t.Errorf("remove the deployment: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		_, err := cl.Client.CoreV1().Namespaces().Get(ctx, sandboxNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("namespace %s not gone within 3m", sandboxNamespace)
}

// replicas maps each Ready replica's Pod name to its IP, leaving out
// not.
func replicas(ctx context.Context, cl testutil.Cluster, not string) map[string]string {
	pods, err := cl.Client.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{LabelSelector: deploySelector})
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Name == not || p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out[p.Name] = p.Status.PodIP
			}
		}
	}
	return out
}

// restarted names a replica whose container has restarted, if any.
func restarted(ctx context.Context, cl testutil.Cluster) string {
	pods, err := cl.Client.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{LabelSelector: deploySelector})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				return p.Name
			}
		}
	}
	return ""
}

// replicasAll names every replica's Pod, Ready or not.
func replicasAll(ctx context.Context, cl testutil.Cluster) []string {
	pods, err := cl.Client.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{LabelSelector: deploySelector})
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	return out
}

// deployLoad creates sandboxes and writes files through whichever
// replicas are Ready, retrying what fails, and keeps what each replica
// acknowledged.
type deployLoad struct {
	cl    testutil.Cluster
	admin string

	mu        sync.Mutex
	sandboxes map[string]string // id → the node it was created on
	writes    []ackedWrite
	failed    int
}

// ackedWrite is a file write a replica acknowledged.
type ackedWrite struct{ sandbox, path, body string }

// client is a client of one Ready replica, a different one each call.
func (l *deployLoad) client(ctx context.Context) *client.Client {
	for {
		for _, ip := range replicas(ctx, l.cl, "") {
			return client.New("http://"+net.JoinHostPort(ip, "7070"), l.admin)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// run is one worker: two sandboxes of its own, then file writes to
// them in turn, until stop.
func (l *deployLoad) run(ctx context.Context, w int, stop <-chan struct{}) {
	var mine []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := l.step(cctx, w, i, &mine)
		cancel()
		if err != nil {
			l.mu.Lock()
			l.failed++
			l.mu.Unlock()
			time.Sleep(300 * time.Millisecond)
		}
	}
}

// step is one call of worker w: a create while it has fewer than two
// sandboxes, else a write.
func (l *deployLoad) step(ctx context.Context, w, i int, mine *[]string) error {
	c := l.client(ctx)
	if len(*mine) < 2 {
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{MemoryMB: 128, CPU: 0.5}})
		if err != nil {
			return err
		}
		l.mu.Lock()
		if l.sandboxes == nil {
			l.sandboxes = map[string]string{}
		}
		l.sandboxes[sb.ID] = sb.Node
		l.mu.Unlock()
		*mine = append(*mine, sb.ID)
		return nil
	}
	id := (*mine)[i%2]
	p, body := fmt.Sprintf("w%d/%d.txt", w, i), fmt.Sprintf("worker %d call %d\n", w, i)
	if _, err := c.WriteFile(ctx, id, p, 0o644, strings.NewReader(body)); err != nil {
		return err
	}
	l.mu.Lock()
	l.writes = append(l.writes, ackedWrite{id, p, body})
	l.mu.Unlock()
	return nil
}

// owners counts the acknowledged sandboxes of each replica.
func (l *deployLoad) owners() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, n := range l.sandboxes {
		out[n]++
	}
	return out
}

// allAnswer is nil once every acknowledged sandbox created on node
// answers an exec through the replicas left.
func (l *deployLoad) allAnswer(ctx context.Context, node string) error {
	l.mu.Lock()
	var ids []string
	for id, n := range l.sandboxes {
		if n == node {
			ids = append(ids, id)
		}
	}
	l.mu.Unlock()
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		res, err := l.client(ctx).Exec(ctx, id, api.ExecRequest{Cmd: []string{"true"}})
		cancel()
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return errors.New("exec true: exit " + fmt.Sprint(res.ExitCode))
		}
	}
	return nil
}

// acked is what the replicas acknowledged.
func (l *deployLoad) acked() (map[string]string, []ackedWrite) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sandboxes, l.writes
}

func (l *deployLoad) failures() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// readAll reads a sandbox's file whole.
func readAll(ctx context.Context, c *client.Client, id, path string) (string, error) {
	r, err := c.ReadFile(ctx, id, path)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

// eventuallyDo calls check until it returns nil or within has passed,
// then fails t with what it said last.
func eventuallyDo(t *testing.T, within time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, within, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
