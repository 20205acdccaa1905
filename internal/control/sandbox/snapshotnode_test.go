package sandbox

import (
	"context"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
)

// TestSnapshotNode: a snapshot's files are on the disk of the node that
// ran the sandbox it was taken of, where a create from it is sent, unless
// its driver keeps snapshots off any node's disk: then any node starts
// from it.
func TestSnapshotNode(t *testing.T) {
	f := newFixture(t, nil)
	of := &store.Sandbox{ID: ids.New(), TenantID: f.tenant, State: api.StateStopped, Template: "host", Driver: "fake", Node: "node-b"}
	if err := f.st.CreateSandbox(f.ctx, of); err != nil {
		t.Fatal(err)
	}
	snap := &store.Snapshot{ID: ids.New(), TenantID: f.tenant, SandboxID: of.ID, Template: "host", Driver: "fake"}
	if err := f.st.CreateSnapshot(f.ctx, snap); err != nil {
		t.Fatal(err)
	}
	if node, err := f.svc.SnapshotNode(f.ctx, snap.ID); err != nil || node != "node-b" {
		t.Fatalf("SnapshotNode = %q, %v; want node-b, its sandbox's", node, err)
	}
	if err := f.svc.snapshotHere(f.ctx, snap); err == nil {
		t.Fatal("a restore from a snapshot on another node's disk was not refused")
	}

	caps := f.drv.Capabilities()
	caps.Snapshots, caps.SharedSnapshots = true, true
	f.drv = fake.New(fake.Config{Dir: t.TempDir(), Capabilities: &caps})
	if err := f.drv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Shutdown(f.drv) })
	shared := f.service(t, f.st)
	if node, err := shared.SnapshotNode(f.ctx, snap.ID); err != nil || node != "" {
		t.Fatalf("SnapshotNode of a driver that shares its snapshots = %q, %v; want any node", node, err)
	}
	if err := shared.snapshotHere(f.ctx, snap); err != nil {
		t.Fatalf("a restore from a shared snapshot: %v", err)
	}
}
