// Package kubernetes is the kubernetes driver: the cluster places and
// runs sandboxes, one Pod each, in a namespace hutch owns, and hutch
// keeps doing the rest (the API, tenancy, templates, previews, apps) as
// with any driver.
//
// A sandbox is a Pod and a Secret, both named hutch-<sandbox id> and
// labelled with the sandbox and the node that made them (pod.go). The
// Pod runs the template's image with hutch-agent as its entrypoint: an
// init container copies the agent from hutch's own small image into an
// empty volume, so any image works unchanged. The agent's envelope
// (its token among it) comes from the Secret, and it listens on the
// Pod's IP, where the control plane dials it; every request is signed
// with the sandbox's token and every answer carries the agent's proof,
// so no other Pod can speak for it or replay a request to it.
//
// Lifecycle: New checks the options without touching the cluster; Open
// connects (a kubeconfig, or a Pod's in-cluster credentials), checks the
// namespace, pushes the agent's and the base template's images to the
// registry the cluster pulls from (images.go) and starts one informer on
// the sandboxes' Pods (watch.go), which every wait and status reads:
// nothing polls the API server per sandbox. Every node sees every Pod,
// so a node takes over a lost node's sandboxes (Adopt). Close stops the
// informer; the Pods keep running, and the next server re-attaches with
// Recover.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Name is the driver's name.
const Name = "kubernetes"

func init() {
	driver.Register(driver.Registration{
		Name:    Name,
		Summary: "one Pod per sandbox on a Kubernetes cluster (--kubeconfig, --kubernetes-namespace, --kubernetes-registry)",
		Factory: New,
	})
}

// Driver runs sandboxes as Pods. It is safe for concurrent use.
type Driver struct {
	opts driver.Options
	cfg  driver.KubernetesOptions
	log  *slog.Logger

	// Set by Open.
	cs        corev1client.CoreV1Interface
	nets      networkingv1client.NetworkingV1Interface
	images    images
	templates templateImages
	pods      *podWatch
	pools     pools

	// The NetworkPolicy probe (netpol.go), run once after Open by a
	// goroutine the driver owns: Close cancels it and waits.
	stopProbe context.CancelFunc
	probed    chan struct{}
	mu        sync.Mutex
	netpol    int    // netpolUnknown until the probe answers
	netpolErr string // why the probe could not tell

	closeOnce sync.Once
}

// New checks opts; it makes no connection.
func New(opts driver.Options) (driver.Driver, error) {
	cfg := opts.Kubernetes
	if !cfg.Required && (cfg.Registry == "" || cfg.Kubeconfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "") {
		return nil, fmt.Errorf("%w: no --kubernetes-registry, or neither --kubeconfig nor a Pod's credentials", driver.ErrNotConfigured)
	}
	switch {
	case cfg.Namespace == "":
		return nil, errors.New("the kubernetes driver needs --kubernetes-namespace, the namespace hutch owns")
	case cfg.Registry == "":
		return nil, errors.New("the kubernetes driver needs --kubernetes-registry, host:port of a registry the cluster pulls from (hutch pushes its images there)")
	case strings.Contains(cfg.Registry, "/"):
		return nil, fmt.Errorf("--kubernetes-registry %q: want host[:port], no scheme or path", cfg.Registry)
	case opts.Node == "":
		return nil, errors.New("the kubernetes driver needs the node's name")
	case opts.Dir == "":
		return nil, errors.New("the kubernetes driver needs a directory of its own (where it packs templates' images)")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Driver{opts: opts, cfg: cfg, log: opts.Log}, nil
}

// Name is "kubernetes".
func (d *Driver) Name() string { return Name }

// Open connects to the cluster, checks the namespace, pushes the images
// and starts the informer.
func (d *Driver) Open(ctx context.Context) error {
	rc, err := restConfig(d.cfg.Kubeconfig)
	if err != nil {
		return err
	}
	d.cs, err = corev1client.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	if d.nets, err = networkingv1client.NewForConfig(rc); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	if _, err := d.cs.Namespaces().Get(ctx, d.cfg.Namespace, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s does not exist: create it (kubectl create namespace %[1]s) or name another with --kubernetes-namespace", d.cfg.Namespace)
		}
		return fmt.Errorf("reach the cluster (namespace %s): %w", d.cfg.Namespace, err)
	}
	if d.images, err = pushImages(ctx, d.cfg.Registry, d.opts.AgentPath, d.log); err != nil {
		return err
	}
	if d.pods, err = watchPods(ctx, d.cs, d.cfg.Namespace, managed); err != nil {
		return err
	}
	d.dropEarlierWarm(ctx)
	// A stop's layer and the warm pool's directory live under it.
	if err := os.MkdirAll(d.opts.Dir, 0o700); err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.stopProbe, d.probed = cancel, make(chan struct{})
	go func() {
		defer close(d.probed)
		start := time.Now()
		st, err := d.probeNetworkPolicy(pctx)
		d.mu.Lock()
		d.netpol = st
		if err != nil {
			d.netpolErr = err.Error()
		}
		d.mu.Unlock()
		d.log.Info("NetworkPolicy probe", "enforced", st == netpolEnforced, "took", time.Since(start).Round(time.Millisecond), "err", err)
	}()
	d.log.Info("kubernetes driver open", "namespace", d.cfg.Namespace, "registry", d.cfg.Registry,
		"agent_image", d.images.agent, "base_image", d.images.base)
	return nil
}

// The client's own bound on its calls to the API server. client-go's
// default, 5 a second with bursts of 10, held a call of a create for
// 1.1 s with 8 clients creating at once (a create and a destroy are
// seven calls); creates a second stayed 0.7 without it, bound by the
// node (bench/README, "kubernetes"). These are the scheduler's; the API
// server's priority and fairness still protects it from any one client.
const (
	apiQPS   = 50
	apiBurst = 100
)

// restConfig is the kubeconfig's, or the Pod's in-cluster one.
func restConfig(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig == "" {
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("in-cluster credentials: %w (outside a Pod, give --kubeconfig)", err)
		}
	} else if rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = apiQPS, apiBurst
	return rc, nil
}

// Close stops the informer. The Pods keep running.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		if d.stopProbe != nil {
			d.stopProbe()
			<-d.probed
		}
		if d.pods != nil {
			d.closePools()
			d.pods.stop()
		}
	})
	return nil
}

// Capabilities says what the driver does on this cluster; what the
// NetworkPolicy probe found once it has.
func (d *Driver) Capabilities() driver.Capabilities {
	d.mu.Lock()
	netpol, why := d.netpol, d.netpolErr
	d.mu.Unlock()
	var degraded []string
	switch {
	case netpol == netpolEnforced:
		// Egress is confined: the Pod has no route out but its agent's
		// streams to hutch's egress proxy.
	case netpol == netpolIgnored:
		degraded = append(degraded, "the cluster's network plugin does not enforce NetworkPolicies (probed): a process that ignores the sandbox's proxy settings reaches whatever the Pod network routes to, the node and other Pods included, so egress policies other than public are refused")
	case why != "":
		degraded = append(degraded, "whether the cluster enforces NetworkPolicies could not be probed ("+why+"): a process that ignores the sandbox's proxy settings may reach whatever the Pod network routes to, so egress policies other than public are refused")
	default:
		degraded = append(degraded, "whether the cluster enforces NetworkPolicies is being probed: until then a process that ignores the sandbox's proxy settings may reach whatever the Pod network routes to, and egress policies other than public are refused")
	}
	if !d.cfg.UserNamespaces {
		degraded = append(degraded, "sandboxes share the node's user ids (no --kubernetes-user-namespaces): a sandbox's root is uid 0 on the node, without capabilities")
	}
	isolation := api.IsolationDegraded
	if len(degraded) == 0 {
		isolation = api.IsolationFull
	}
	return driver.Capabilities{
		Isolation: isolation,
		Degraded:  degraded,
		Templates: []string{hostTemplate},
		RootUser:  true,
		// An image template is flattened into one tree, packed as one
		// layer and pushed to the registry by its first sandbox.
		Images: true,
		// A snapshot, and a stop, is a layer over the Pod's image in the
		// registry (snapshot.go).
		Snapshots:       true,
		SharedSnapshots: true,
		StartStop:       true,
		// Egress goes through hutch's proxy, but only a NetworkPolicy
		// the cluster enforces keeps a process from going around it.
		UnconfinedEgress: netpol != netpolEnforced,
		// Memory and CPU are the container's limits; the kubelet
		// enforces no pids limit per Pod.
		Limits: driver.LimitCaps{Memory: true, CPU: true},
	}
}

// phaseOf names a Pod's state for messages.
func phaseOf(p *corev1.Pod) string {
	if p == nil {
		return "gone"
	}
	return string(p.Status.Phase)
}
