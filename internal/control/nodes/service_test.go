package nodes

import (
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// TestToAPI: a node shows the state its row holds until its heartbeat
// is older than store.LostAfter, then lost whatever the row holds; it
// lists the leases it holds, by name, and none of another's.
func TestToAPI(t *testing.T) {
	leases := []store.Lease{{Name: "fleet", Holder: "a"}, {Name: "b-work", Holder: "b"}, {Name: "a-work", Holder: "a"}}
	for _, tc := range []struct {
		row        store.Node
		wantState  string
		wantLeases []string
	}{
		{store.Node{Name: "a", State: store.NodeActive, HeartbeatAge: time.Second}, api.NodeActive, []string{"a-work", "fleet"}},
		{store.Node{Name: "a", State: store.NodeDraining, HeartbeatAge: store.LostAfter}, api.NodeDraining, []string{"a-work", "fleet"}},
		{store.Node{Name: "c", State: store.NodeDraining, HeartbeatAge: store.LostAfter + time.Millisecond}, api.NodeLost, nil},
		{store.Node{Name: "b", State: store.NodeActive, HeartbeatAge: time.Hour, Load: store.NodeLoad{Running: 3}}, api.NodeLost, []string{"b-work"}},
	} {
		got := toAPI(&tc.row, leases)
		if got.State != tc.wantState || !slices.Equal(got.Leases, tc.wantLeases) || got.HeartbeatAgeMS != tc.row.HeartbeatAge.Milliseconds() ||
			got.Running != tc.row.Load.Running {
			t.Errorf("toAPI(%+v) = %+v; want state %s, leases %v", tc.row, got, tc.wantState, tc.wantLeases)
		}
	}
}
