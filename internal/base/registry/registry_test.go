package registry

import (
	"slices"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[int]("widget")
	r.Add("b", 2)
	r.Add("a", 1)
	if v, ok := r.Lookup("b"); !ok || v != 2 {
		t.Errorf("Lookup(b) = %d, %v", v, ok)
	}
	if _, ok := r.Lookup("c"); ok {
		t.Error("Lookup found what was never added")
	}
	if got := r.All(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("All() = %v; want by name", got)
	}
	for name, add := range map[string]func(){
		"twice":   func() { r.Add("a", 3) },
		"no name": func() { r.Add("", 4) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil {
					t.Error("did not panic")
				}
			}()
			add()
		})
	}
	if v, _ := r.Lookup("a"); v != 1 {
		t.Errorf("a second registration replaced the first: %d", v)
	}
}
