package sandbox

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// countingStore counts GetSandbox's reads.
type countingStore struct {
	store.Store
	reads atomic.Int64
}

func (c *countingStore) GetSandbox(ctx context.Context, id string) (*store.Sandbox, error) {
	c.reads.Add(1)
	return c.Store.GetSandbox(ctx, id)
}

// elsewhere records a running sandbox of node-b, which this service
// (node-a) does not run, and returns its id.
func (f *liveFixture) elsewhere(t *testing.T) string {
	t.Helper()
	rec := &store.Sandbox{State: api.StateRunning, Template: "host", Driver: "fake", Node: "node-b"}
	if err := f.st.CreateSandbox(f.ctx, rec); err != nil {
		t.Fatal(err)
	}
	return rec.ID
}

// TestNodeOfKept: the node of a sandbox another node runs is read from
// the store once, then served from memory until recordTTL passes; one
// live here is read from its kept record.
func TestNodeOfKept(t *testing.T) {
	cs := &countingStore{}
	f := newLiveFixture(t, func(c *Config) { cs.Store = c.Store; c.Store = cs })
	id := f.elsewhere(t)
	for range 5 {
		if n, err := f.svc.NodeOf(f.ctx, id); err != nil || n != "node-b" {
			t.Fatalf("NodeOf = %q, %v; want node-b", n, err)
		}
	}
	if got := cs.reads.Load(); got != 1 {
		t.Fatalf("%d reads of the store for 5 calls; want 1", got)
	}
	f.svc.nodes.mu.Lock()
	k := f.svc.nodes.kept[id]
	k.at = k.at.Add(-recordTTL)
	f.svc.nodes.kept[id] = k
	f.svc.nodes.mu.Unlock()
	if _, err := f.svc.NodeOf(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := cs.reads.Load(); got != 2 {
		t.Fatalf("%d reads after the entry expired; want 2", got)
	}
	sb := f.create(t)
	before := cs.reads.Load()
	if n, err := f.svc.NodeOf(f.ctx, sb.ID); err != nil || n != "node-a" {
		t.Fatalf("NodeOf a sandbox live here = %q, %v; want node-a", n, err)
	}
	if got := cs.reads.Load(); got != before {
		t.Fatalf("a sandbox live here cost %d reads; want none", got-before)
	}
}

// TestNodeOfForgotten: a write the store tells (or a resync) forgets a
// kept node, so a sandbox whose node was lost is answered unavailable
// ("") at the next call, not a second later.
func TestNodeOfForgotten(t *testing.T) {
	f := newLiveFixture(t, nil)
	id := f.elsewhere(t)
	if n, _ := f.svc.NodeOf(f.ctx, id); n != "node-b" {
		t.Fatalf("NodeOf = %q; want node-b", n)
	}
	rec, err := f.st.UpdateSandbox(f.ctx, id, func(sb *store.Sandbox) error {
		sb.State = api.StateUnavailable
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := f.svc.NodeOf(f.ctx, id); n != "node-b" {
		t.Fatalf("NodeOf before the store told = %q; want the kept node-b", n)
	}
	f.svc.StoreChanged(f.ctx, store.Change{Kind: store.ChangeSandbox, SandboxID: id, TenantID: rec.TenantID, Rev: rec.Rev})
	if n, err := f.svc.NodeOf(f.ctx, id); err != nil || n != "" {
		t.Fatalf("NodeOf after the store told = %q, %v; want \"\" (unavailable)", n, err)
	}
	if _, err := f.st.UpdateSandbox(f.ctx, id, func(sb *store.Sandbox) error {
		sb.State = api.StateRunning
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.svc.StoreChanged(f.ctx, store.Change{Kind: store.ChangeResync})
	if n, _ := f.svc.NodeOf(f.ctx, id); n != "node-b" {
		t.Fatalf("NodeOf after a resync = %q; want node-b", n)
	}
}

// TestNodeOfReadRacingWrite: a read of the store that a told write
// overtakes is not kept.
func TestNodeOfReadRacingWrite(t *testing.T) {
	rs := &racingStore{}
	f := newLiveFixture(t, func(c *Config) { rs.Store = c.Store; c.Store = rs })
	id := f.elsewhere(t)
	rs.mu.Lock()
	rs.after = func() { f.svc.StoreChanged(f.ctx, store.Change{Kind: store.ChangeSandbox, SandboxID: id}) }
	rs.mu.Unlock()
	if _, err := f.svc.NodeOf(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	f.svc.nodes.mu.Lock()
	_, kept := f.svc.nodes.kept[id]
	f.svc.nodes.mu.Unlock()
	if kept {
		t.Fatal("a read the store's change overtook was kept")
	}
}

// TestNodeOfOtherTenant: a kept node is served only to a caller who may
// see the sandbox; another tenant's call is 404 as always.
func TestNodeOfOtherTenant(t *testing.T) {
	f := newLiveFixture(t, nil)
	id := f.elsewhere(t)
	if _, err := f.svc.NodeOf(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	other := store.Tenant{ID: ids.New(), Name: "other"}
	if err := f.st.CreateTenant(tenancy.System(context.Background()), other); err != nil {
		t.Fatal(err)
	}
	octx := tenancy.With(context.Background(), tenancy.Principal{TenantID: other.ID, Role: api.RoleAdmin})
	if n, err := f.svc.NodeOf(octx, id); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Fatalf("another tenant's NodeOf = %q, %v; want sandbox_not_found", n, err)
	}
}
