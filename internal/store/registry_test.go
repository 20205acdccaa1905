package store

import (
	"context"
	"slices"
	"testing"
)

// TestRegistry: stores are found by name and listed by name, and a name
// taken twice or a registration without a factory panics.
func TestRegistry(t *testing.T) {
	open := func(context.Context, Options) (Store, error) { return nil, nil }
	Register(Registration{Name: "test-zeta", Summary: "last", Factory: open})
	Register(Registration{Name: "test-alpha", Summary: "first", Factory: open})

	r, ok := Lookup("test-alpha")
	if !ok || r.Name != "test-alpha" || r.Summary != "first" || r.Factory == nil {
		t.Errorf("Lookup(test-alpha) = %+v, %v", r, ok)
	}
	if _, ok := Lookup("test-missing"); ok {
		t.Error("Lookup found a store never registered")
	}
	names := Names()
	if i, j := slices.Index(names, "test-alpha"), slices.Index(names, "test-zeta"); i < 0 || j < 0 || i > j {
		t.Errorf("Names() = %v, want test-alpha before test-zeta", names)
	}
	if !slices.IsSorted(names) {
		t.Errorf("Names() = %v, not by name", names)
	}

	for name, r := range map[string]Registration{
		"twice":      {Name: "test-alpha", Factory: open},
		"no name":    {Factory: open},
		"no factory": {Name: "test-nofactory"},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", r)
				}
			}()
			Register(r)
		})
	}
	if _, ok := Lookup("test-nofactory"); ok {
		t.Error("a registration without a factory was kept")
	}
}
