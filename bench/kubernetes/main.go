// Command kubernetes measures the kubernetes driver on a real cluster
// beside its floor, measured in the same run: a bare Pod of the same
// image made and watched to Running, as `kubectl run` makes one.
//
//   - create → first exec: a sandbox's create through the API until its
//     first exec (`true`) answered, against the floor's create → Running;
//   - exec round trip: `true` run to completion in a running sandbox;
//   - creates/s: -clients clients create and destroy -creates sandboxes.
//
// It runs a hutch server in this process on the driver, in a namespace of
// its own that it deletes at the end.
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/... ./bench/... && bin/kubernetes -agent bin/hutch-agent \
//	  -kubeconfig $HOME/.cache/hutch-k8s/state/admin.kubeconfig -registry 127.0.213.1:5000
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/bench/internal/stat"
	"github.com/hutchdev/hutch/internal/server/config"
)

func main() {
	var o options
	flag.StringVar(&o.agent, "agent", "", "path of hutch-agent (default: beside this binary)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("HUTCH_TEST_KUBECONFIG"), "the cluster's kubeconfig ($HUTCH_TEST_KUBECONFIG)")
	flag.StringVar(&o.registry, "registry", os.Getenv("HUTCH_TEST_KUBERNETES_REGISTRY"), "host:port of the registry the cluster pulls from ($HUTCH_TEST_KUBERNETES_REGISTRY)")
	flag.IntVar(&o.n, "n", 20, "sandboxes (and bare Pods) created one at a time")
	flag.IntVar(&o.execs, "execs", 300, "exec round trips")
	flag.IntVar(&o.creates, "creates", 40, "sandboxes created and destroyed for creates/s (0: skip)")
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients for creates/s")
	flag.IntVar(&o.rounds, "rounds", 10, "rounds of snapshot, stop, start and fork of one sandbox (0: skip)")
	flag.IntVar(&o.pool, "warm-pool", 0, "warm Pods kept per kind (hutch serve --warm-pool)")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "kubernetes:", err)
		os.Exit(1)
	}
}

type options struct {
	agent, kubeconfig, registry              string
	n, execs, creates, clients, rounds, pool int
}

func run(ctx context.Context, o options) error {
	if o.kubeconfig == "" || o.registry == "" {
		return fmt.Errorf("-kubeconfig and -registry name the cluster (.ci/k8s/k8s-up starts one)")
	}
	if o.agent == "" {
		self, _ := os.Executable()
		o.agent = filepath.Join(filepath.Dir(self), "hutch-agent")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		return err
	}
	ns := "hutch-bench-" + randHex(4)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer cs.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})

	fmt.Fprintf(os.Stderr, "starting hutch on the kubernetes driver in namespace %s (pushing its images)\n", ns)
	s, err := benchserver.Start(ctx, func(c *config.Config) {
		c.AgentPath, c.Driver, c.WarmPool = o.agent, "kubernetes", o.pool
		c.Kubernetes.Kubeconfig, c.Kubernetes.Namespace, c.Kubernetes.Registry, c.Kubernetes.Required = o.kubeconfig, ns, o.registry, true
	})
	if err != nil {
		return err
	}
	defer s.Stop(ctx)
	c := s.Client

	// create → first exec, one at a time; the image of the first is the floor's.
	var image string
	var toExec, rtt []time.Duration
	for i := range o.n {
		fmt.Fprintf(os.Stderr, "\rsandbox %d/%d", i+1, o.n)
		start := time.Now()
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			return err
		}
		if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
			return err
		}
		toExec = append(toExec, time.Since(start))
		if image == "" {
			pod, err := cs.CoreV1().Pods(ns).Get(ctx, "hutch-"+sb.ID, metav1.GetOptions{})
			if err != nil {
				return err
			}
			image = pod.Spec.Containers[0].Image
		}
		if i < o.n-1 {
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				return err
			}
			continue
		}
		// The last one stays for the exec round trips.
		for j := range o.execs {
			if j%50 == 0 {
				fmt.Fprintf(os.Stderr, "\rexec %d/%d   ", j, o.execs)
			}
			t := time.Now()
			if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
				return err
			}
			rtt = append(rtt, time.Since(t))
		}
		c.DeleteSandbox(ctx, sb.ID)
	}
	var floor []time.Duration
	for i := range o.n {
		fmt.Fprintf(os.Stderr, "\rbare Pod %d/%d   ", i+1, o.n)
		d, err := barePod(ctx, cs, ns, image)
		if err != nil {
			return err
		}
		floor = append(floor, d)
	}
	var lc lifecycleTimes
	if o.rounds > 0 {
		if lc, err = lifecycle(ctx, s, o.rounds); err != nil {
			return err
		}
	}
	var rate float64
	if o.creates > 0 {
		if rate, err = createRate(ctx, s, o); err != nil {
			return err
		}
	}
	fmt.Fprintln(os.Stderr)
	fmt.Printf("| kubernetes driver, warm pool %d | p50 | p99 | n |\n", o.pool)
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| bare Pod of the same image, create → Running (floor) | %s | %s | %d |\n", stat.MS(stat.Pct(floor, 50)), stat.MS(stat.Pct(floor, 99)), len(floor))
	fmt.Printf("| sandbox create → first exec answered | %s | %s | %d |\n", stat.MS(stat.Pct(toExec, 50)), stat.MS(stat.Pct(toExec, 99)), len(toExec))
	fmt.Printf("| exec `true`, round trip | %s | %s | %d |\n", stat.MS(stat.Pct(rtt, 50)), stat.MS(stat.Pct(rtt, 99)), len(rtt))
	if o.rounds > 0 {
		lc.print()
	}
	if o.creates > 0 {
		fmt.Printf("| creates/s, %d clients (create, then destroy) | %.1f/s | | %d |\n", o.clients, rate, o.creates)
	}
	return nil
}

// lifecycleTimes are the rounds of lifecycle.
type lifecycleTimes struct {
	snapshot, stop, start, fork, destroy []time.Duration
}

// lifecycle times, in each of rounds, on one sandbox holding a 1 MiB
// file written that round: a snapshot, a stop, a start until its first
// exec, a fork of one until the fork's first exec, and that fork's
// destroy.
func lifecycle(ctx context.Context, s *benchserver.Server, rounds int) (lifecycleTimes, error) {
	var lt lifecycleTimes
	c := s.Client
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return lt, err
	}
	defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
	exec := func(id string) error {
		_, err := c.Exec(ctx, id, api.ExecRequest{Cmd: []string{"true"}})
		return err
	}
	timed := func(into *[]time.Duration, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return err
		}
		*into = append(*into, time.Since(start))
		return nil
	}
	for i := range rounds {
		fmt.Fprintf(os.Stderr, "\rsnapshot, stop, start, fork %d/%d   ", i+1, rounds)
		if _, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", fmt.Sprintf("head -c 1048576 /dev/urandom > round-%d", i)}}); err != nil {
			return lt, err
		}
		var snapID string
		if err := timed(&lt.snapshot, func() error {
			snap, err := c.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{})
			if err == nil {
				snapID = snap.ID
			}
			return err
		}); err != nil {
			return lt, err
		}
		if err := c.DeleteSnapshot(ctx, snapID); err != nil {
			return lt, err
		}
		if err := timed(&lt.stop, func() error { _, err := c.StopSandbox(ctx, sb.ID); return err }); err != nil {
			return lt, err
		}
		if err := timed(&lt.start, func() error {
			if _, err := c.StartSandbox(ctx, sb.ID); err != nil {
				return err
			}
			return exec(sb.ID)
		}); err != nil {
			return lt, err
		}
		var forkID string
		if err := timed(&lt.fork, func() error {
			res, err := c.Fork(ctx, sb.ID, api.ForkRequest{Count: 1})
			if err != nil {
				return err
			}
			forkID = res.Sandboxes[0].ID
			return exec(forkID)
		}); err != nil {
			return lt, err
		}
		if err := timed(&lt.destroy, func() error { return c.DeleteSandbox(ctx, forkID) }); err != nil {
			return lt, err
		}
	}
	return lt, nil
}

func (lt lifecycleTimes) print() {
	for _, r := range []struct {
		what string
		d    []time.Duration
	}{
		{"snapshot (a layer of the round's 1 MiB file, pushed)", lt.snapshot},
		{"stop (a snapshot, then the Pod deleted)", lt.stop},
		{"start → first exec answered", lt.start},
		{"fork of one → the fork's first exec answered", lt.fork},
		{"destroy (the Pod gone, its processes ended)", lt.destroy},
	} {
		fmt.Printf("| %s | %s | %s | %d |\n", r.what, stat.MS(stat.Pct(r.d, 50)), stat.MS(stat.Pct(r.d, 99)), len(r.d))
	}
}

// barePod creates a Pod of image running sleep, waits for it Running and
// deletes it at once; it returns create → Running.
func barePod(ctx context.Context, cs k8s.Interface, ns, image string) (time.Duration, error) {
	name := "floor-" + randHex(4)
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "c", Image: image, Command: []string{"/bin/sleep", "3600"}}},
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	defer cs.CoreV1().Pods(ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("bare Pod %s: not Running: %w", name, context.Cause(ctx))
}

// createRate runs o.clients clients that create and destroy o.creates
// sandboxes in all, and returns creates per second.
func createRate(ctx context.Context, s *benchserver.Server, o options) (float64, error) {
	var left atomic.Int64
	left.Store(int64(o.creates))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	start := time.Now()
	for range o.clients {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				sb, err := s.Client.CreateSandbox(ctx, api.CreateSandboxRequest{})
				if err == nil {
					err = s.Client.DeleteSandbox(ctx, sb.ID)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				fmt.Fprintf(os.Stderr, "\rcreates left %d   ", max(left.Load(), 0))
			}
		})
	}
	wg.Wait()
	fmt.Fprintln(os.Stderr)
	if len(errs) > 0 {
		return 0, errs[0]
	}
	return float64(o.creates) / time.Since(start).Seconds(), nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
