package store

import (
	"context"

	reg "github.com/hutchdev/hutch/internal/base/registry"
)

// Options is what the server hands every store's factory.
type Options struct {
	// Dir is the data directory, which the server has made; a store that
	// keeps files keeps them in it.
	Dir string
	// DSN names the database of a store that runs as a server of its own
	// (Postgres); "" for a store that keeps files in Dir.
	DSN string
	// OnFull, when set, is called when a write finds the filesystem of a
	// store that keeps files full; it reports whether it freed room, and
	// the write is then tried once more (internal/runtime/host/diskguard's reserve).
	OnFull func() bool
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
	// NeedsDSN is set for a store that runs as a server of its own: it
	// opens the database Options.DSN names (hutch serve --store-url),
	// and a store without it takes none.
	NeedsDSN bool
	Factory  Factory
}

var registry = reg.New[Registration]("store")

// Register adds a store; a store package calls it from init, so adding a
// store is one package and one Register call. A second registration of a
// name panics.
func Register(r Registration) {
	if r.Factory == nil {
		panic("store: Register needs a factory")
	}
	registry.Add(r.Name, r)
}

// Lookup returns the registration of name.
func Lookup(name string) (Registration, bool) { return registry.Lookup(name) }

// Registered returns every registration, by name.
func Registered() []Registration { return registry.All() }

// Names returns the registered names in Registered's order.
func Names() []string {
	var out []string
	for _, r := range Registered() {
		out = append(out, r.Name)
	}
	return out
}
