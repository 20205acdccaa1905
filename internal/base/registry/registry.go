// Package registry is the one shape of hutch's plugin registries (drivers,
// stores): a name → value map that packages add to from init, that panics
// on a nameless or second registration, and that lists by name.
// containerd's plugin registry is the model.
package registry

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Registry holds what one kind of plugin registered. The zero value is
// not ready; use New.
type Registry[T any] struct {
	kind string
	mu   sync.Mutex
	m    map[string]T
}

// New returns an empty registry of kind ("driver", "store"), the word its
// panics use.
func New[T any](kind string) *Registry[T] {
	return &Registry[T]{kind: kind, m: map[string]T{}}
}

// Add registers v under name; an empty name or a second registration of a
// name panics, as a mistake of the build.
func (r *Registry[T]) Add(name string, v T) {
	if name == "" {
		panic(r.kind + ": registered without a name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("%s: %q registered twice", r.kind, name))
	}
	r.m[name] = v
}

// Lookup returns what name registered.
func (r *Registry[T]) Lookup(name string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[name]
	return v, ok
}

// All returns every registration, by name.
func (r *Registry[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.m))
	for _, name := range slices.Sorted(maps.Keys(r.m)) {
		out = append(out, r.m[name])
	}
	return out
}
