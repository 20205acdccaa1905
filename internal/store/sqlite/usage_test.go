package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestUsageMigration: migration 0020 counts the sandboxes a database
// already holds as the store's writes count them (store.ShareOf), so the
// counters of an upgraded database are what a fresh one would hold.
func TestUsageMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := open(t, path)
	sys := tenancy.System(context.Background())
	tenants := []string{"t1", "t2"}
	for _, id := range tenants {
		if err := s.CreateTenant(sys, store.Tenant{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for _, st := range []api.SandboxState{api.StateRunning, api.StateStopped, api.StatePaused, api.StateFailed, api.StateDestroyed, api.StateCreating} {
		for _, node := range []string{"", "n1"} {
			i++
			sb := &store.Sandbox{TenantID: tenants[i%2], State: st, Template: "host", Driver: "process", Node: node,
				Limits: api.Limits{MemoryMB: 100 * i, CPU: 0.125 * float64(i), Pids: i}}
			if err := s.CreateSandbox(sys, sb); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]store.TenantUsage{}
	for _, id := range tenants {
		u, err := s.TenantUsage(sys, id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = u
	}
	wantNode, err := s.NodeUsage(sys, "n1")
	if err != nil || wantNode.MemoryMB == 0 || want["t1"].Sandboxes == 0 || want["t2"].CPUMilli == 0 {
		t.Fatalf("usage before: node %+v, tenants %+v, %v", wantNode, want, err)
	}

	// Back to the schema before 0020, with the same sandboxes: 0020 and
	// 0022 (a paused sandbox holds no CPU) count them again.
	var cols []string
	for _, f := range store.QuotaCounts(&api.Quotas{}) {
		switch f.Name {
		case "sandboxes", "memory_mb", "pids", "disk_mb":
		default:
			cols = append(cols, "ALTER TABLE tenants DROP COLUMN quota_"+f.Name)
		}
	}
	for _, q := range append(cols, `DROP TABLE tenant_usage`, `DROP TABLE node_usage`,
		`ALTER TABLE sandboxes DROP COLUMN disk_bytes`, `DELETE FROM schema_migrations WHERE version IN (20, 22)`) {
		if _, err := s.w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()

	s = open(t, path)
	defer s.Close()
	for _, id := range tenants {
		got, err := s.TenantUsage(sys, id)
		if err != nil || got != want[id] {
			t.Errorf("tenant %s after the migration: %+v, %v; want %+v", id, got, err, want[id])
		}
	}
	if got, err := s.NodeUsage(sys, "n1"); err != nil || got != wantNode {
		t.Errorf("node n1 after the migration: %+v, %v; want %+v", got, err, wantNode)
	}
}
