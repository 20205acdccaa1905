package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestNodeAgeOnDatabaseClock: a node's heartbeat is the database's
// now(), and its age is measured against the database's now() at the
// read: a row whose heartbeat the database holds an hour old is lost,
// whatever this process's clock says, and one written now is not.
func TestNodeAgeOnDatabaseClock(t *testing.T) {
	ctx := tenancy.System(context.Background())
	s := open(t, testutil.PostgresURL(t))
	n, err := s.RegisterNode(ctx, store.Node{Name: "n", Advertise: "http://n"})
	if err != nil {
		t.Fatal(err)
	}
	var secs float64
	if err := s.pool.QueryRow(ctx, `SELECT extract(epoch FROM heartbeat_at - clock_timestamp())::float8 FROM nodes WHERE name = 'n'`).Scan(&secs); err != nil {
		t.Fatal(err)
	}
	skew := time.Duration(secs * float64(time.Second))
	if skew > time.Second || skew < -5*time.Second || n.Lost() {
		t.Errorf("a registered node's heartbeat is %v from the database's clock, lost %v; want the database's now", skew, n.Lost())
	}
	if _, err := s.pool.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - interval '1 hour' WHERE name = 'n'`); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetNode(ctx, "n")
	if err != nil || !got.Lost() || got.HeartbeatAge < time.Hour || got.HeartbeatAge > time.Hour+time.Minute {
		t.Fatalf("a node whose heartbeat the database holds an hour old: %+v, %v; want lost, an hour old", got, err)
	}
	if got, err = s.HeartbeatNode(ctx, "n", store.NodeLoad{}); err != nil || got.Lost() || got.HeartbeatAge > time.Second {
		t.Errorf("after a heartbeat: %+v, %v; want fresh", got, err)
	}
}
