package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Options is what the server hands every store's factory.
type Options struct {
	// Dir is the data directory, which the server has made; a store that
	// keeps files keeps them in it.
	Dir string
	// DSN names the database of a store that runs as a server of its own
	// (Postgres); "" for a store that keeps files in Dir.
	DSN string
}

// Factory opens a store: it creates or migrates the database and returns
// a ready Store, which the caller closes.
type Factory func(ctx context.Context, o Options) (Store, error)

// Registration is one store this build can keep its state in.
type Registration struct {
	Name string
	// Summary says in a few words where the store keeps the state, for the
	// flag help.
	Summary string
	Factory Factory
}

var registry struct {
	mu sync.Mutex
	m  map[string]Registration
}

// Register adds a store; a store package calls it from init, so adding a
// store is one package and one Register call. A second registration of a
// name panics.
func Register(r Registration) {
	if r.Name == "" || r.Factory == nil {
		panic("store: Register needs a name and a factory")
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.m[r.Name]; dup {
		panic(fmt.Sprintf("store: %q registered twice", r.Name))
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

// Registered returns every registration, by name.
func Registered() []Registration {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	out := make([]Registration, 0, len(registry.m))
	for _, r := range registry.m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Registration) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Names returns the registered names in Registered's order.
func Names() []string {
	var out []string
	for _, r := range Registered() {
		out = append(out, r.Name)
	}
	return out
}
