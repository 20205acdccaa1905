package driver

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
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
	Log          *slog.Logger
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

var registry struct {
	mu sync.Mutex
	m  map[string]Registration
}

// Register adds a driver; a driver package calls it from init, so adding a
// driver is one package and one Register call. A second registration of a
// name panics.
func Register(r Registration) {
	if r.Name == "" || r.Factory == nil {
		panic("driver: Register needs a name and a factory")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.m[r.Name]; dup {
		panic(fmt.Sprintf("driver: %q registered twice", r.Name))
	}
	if registry.m == nil {
		registry.m = map[string]Registration{}
	}
	registry.m[r.Name] = r
}

// Lookup returns the registration of name.
func Lookup(name string) (Registration, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	r, ok := registry.m[name]
	return r, ok
}

// Registered returns every registration, in auto's order of preference
// (drivers auto never chooses last), then by name.
func Registered() []Registration {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	out := make([]Registration, 0, len(registry.m))
	for _, r := range registry.m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Registration) int {
		ka, kb := autoKey(a.Auto), autoKey(b.Auto)
		if ka != kb {
			return ka - kb
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
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
