package placement

import (
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// TestChoose: only active nodes with the driver and every label asked
// for are weighed; the most memory room wins, then the fewest
// sandboxes, then the name; none is 503 no_node_available.
func TestChoose(t *testing.T) {
	nodes := []Candidate{
		{Name: "big-draining", Drivers: []string{"process"}, MemoryRoomMB: 99999, Active: false},
		{Name: "a", Drivers: []string{"process"}, MemoryRoomMB: 4096, Sandboxes: 3, Active: true, Labels: map[string]string{"zone": "x"}},
		{Name: "b", Drivers: []string{"process", "namespace"}, MemoryRoomMB: 4096, Sandboxes: 1, Active: true, Labels: map[string]string{"zone": "y", "gpu": "1"}},
		{Name: "c", Drivers: []string{"process"}, MemoryRoomMB: 1024, Active: true, Labels: map[string]string{"zone": "x"}},
		{Name: "d", Drivers: []string{"process"}, MemoryRoomMB: 1024, Active: true, Labels: map[string]string{"zone": "x"}},
	}
	for _, tc := range []struct {
		name   string
		driver string
		labels map[string]string
		want   string
	}{
		{"most room, then fewest sandboxes", "", nil, "b"},
		{"driver", "namespace", nil, "b"},
		{"label", "", map[string]string{"zone": "x"}, "a"},
		{"every label", "", map[string]string{"zone": "y", "gpu": "1"}, "b"},
		{"a label nobody has", "", map[string]string{"zone": "z"}, ""},
		{"a driver nobody has", "docker", nil, ""},
	} {
		got, err := Choose(nodes, tc.driver, tc.labels)
		if tc.want == "" {
			if !errdefs.HasCode(err, "no_node_available") {
				t.Errorf("%s: %q, %v; want no_node_available", tc.name, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	if got, _ := Choose(nodes[3:], "", nil); got != "c" {
		t.Errorf("a tie of room and sandboxes: %q, want the first by name, c", got)
	}
}
