package driver

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Set is the drivers one server runs: every registered driver that opened,
// the default for new sandboxes, and why each other registered driver is
// not there. A sandbox goes to the driver recorded with it; one recorded
// with a driver that is not in the set is unavailable, and left alone.
type Set struct {
	def     string
	loaded  map[string]Driver
	missing map[string]string
}

// NewSet returns the set; def must be one of loaded.
func NewSet(def string, loaded map[string]Driver, missing map[string]string) (*Set, error) {
	if _, ok := loaded[def]; !ok {
		return nil, fmt.Errorf("driver set: the default driver %q is not loaded", def)
	}
	return &Set{def: def, loaded: maps.Clone(loaded), missing: maps.Clone(missing)}, nil
}

// Single is a set of one driver, the default.
func Single(d Driver) *Set {
	return &Set{def: d.Name(), loaded: map[string]Driver{d.Name(): d}}
}

// Default is the driver new sandboxes get unless they name another.
func (s *Set) Default() Driver { return s.loaded[s.def] }

// Get returns a loaded driver.
func (s *Set) Get(name string) (Driver, bool) {
	d, ok := s.loaded[name]
	return d, ok
}

// Loaded returns the loaded drivers by name.
func (s *Set) Loaded() []Driver {
	out := make([]Driver, 0, len(s.loaded))
	for _, n := range slices.Sorted(maps.Keys(s.loaded)) {
		out = append(out, s.loaded[n])
	}
	return out
}

// Missing says, for each registered driver that is not loaded, why.
func (s *Set) Missing() map[string]string { return maps.Clone(s.missing) }

// Names lists the loaded drivers, for messages.
func (s *Set) Names() string { return strings.Join(slices.Sorted(maps.Keys(s.loaded)), ", ") }
