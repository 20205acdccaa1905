package driver

import (
	"cmp"
	"log/slog"
	"slices"
	"time"

	reg "github.com/hutchdev/hutch/internal/base/registry"
)

// Options is what the server hands every driver's factory.
type Options struct {
	// Dir is the driver's own directory in the data directory; Open makes
	// it, owner-only.
	Dir string
	// AgentPath is the hutch-agent binary.
	AgentPath string
	// WarmPool is how many sandboxes to keep started ahead of need; 0
	// turns the pool off.
	WarmPool int
	// CgroupParent names the cgroup under which a driver that uses cgroups
	// makes one per sandbox.
	CgroupParent string
	// ReserveMemoryMB and ReservePids are kept from sandboxes for the
	// control plane and the host: a driver that makes a parent cgroup caps
	// it at the host's memory and tasks less them (hostinfo.Budget).
	ReserveMemoryMB int
	ReservePids     int
	// Storage is the data directory's storage backend, for drivers that
	// keep sandboxes' files in layers; nil lets a driver probe its own
	// directory.
	Storage Storage
	// FreezeTimeout bounds how long a driver that freezes sandboxes (a
	// pause, a snapshot) waits for their processes to stop; 0 is the
	// driver's default.
	FreezeTimeout time.Duration
	// Node is this server's node name: a driver whose sandboxes live
	// outside the host (the kubernetes driver's Pods) labels them with
	// it, so that each node manages its own.
	Node string
	// Kubernetes is the kubernetes driver's settings.
	Kubernetes KubernetesOptions
	Log        *slog.Logger
}

// KubernetesOptions say which cluster the kubernetes driver runs
// sandboxes on and how.
type KubernetesOptions struct {
	// Kubeconfig is a kubeconfig file; "" uses the in-cluster
	// credentials of a Pod's service account.
	Kubeconfig string
	// Namespace is the namespace hutch owns: every Pod, Secret and
	// NetworkPolicy of a sandbox is made there.
	Namespace string
	// Registry is host[:port] of the registry the cluster pulls from,
	// where hutch pushes its own images and its templates'.
	Registry string
	// RuntimeClass, when set, is the runtimeClassName of every
	// sandbox's Pod (gVisor's, Kata's).
	RuntimeClass string
	// UserNamespaces asks for every Pod in a user namespace of its own
	// (hostUsers: false), which the node's runtime must support.
	UserNamespaces bool
	// Required makes the driver open or fail (--driver kubernetes);
	// otherwise it opens only where a kubeconfig or in-cluster
	// credentials are there, and says it is not configured elsewhere.
	Required bool
}

// Factory builds a driver from its options without touching the host.
type Factory func(Options) (Driver, error)

// Registration is one driver this build can run.
type Registration struct {
	Name string
	// Summary says in a few words what isolation the driver gives, for the
	// flag help.
	Summary string
	// Auto is the driver's place in "--driver auto"'s order of preference,
	// lowest first; 0 keeps auto from ever choosing it.
	Auto    int
	Factory Factory
}

var registry = reg.New[Registration]("driver")

// Register adds a driver; a driver package calls it from init, so adding a
// driver is one package and one Register call. A second registration of a
// name panics.
func Register(r Registration) {
	if r.Factory == nil {
		panic("driver: Register needs a factory")
	}
	registry.Add(r.Name, r)
}

// Lookup returns the registration of name.
func Lookup(name string) (Registration, bool) { return registry.Lookup(name) }

// Registered returns every registration, in auto's order of preference
// (drivers auto never chooses last), then by name.
func Registered() []Registration {
	out := registry.All()
	slices.SortStableFunc(out, func(a, b Registration) int { return cmp.Compare(autoKey(a.Auto), autoKey(b.Auto)) })
	return out
}

func autoKey(n int) int {
	if n <= 0 {
		return int(^uint(0) >> 1)
	}
	return n
}

// Names returns the registered names in Registered's order.
func Names() []string {
	var out []string
	for _, r := range Registered() {
		out = append(out, r.Name)
	}
	return out
}
