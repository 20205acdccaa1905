package cgroups

import (
	"context"
	"testing"
	"time"
)

// TestV1PauseKeepsFrozen freezes a group as a pause does, sees a second
// Freeze (a snapshot of the paused sandbox) leave it frozen after its
// thaw, Thaw let it run, and Kill end a group that is frozen.
func TestV1PauseKeepsFrozen(t *testing.T) {
	m := newV1Manager(t)
	h, ok := m.find(freezer)
	if !ok {
		t.Skip("no v1 freezer on this host")
	}
	if !m.CanFreeze() {
		t.Fatal("CanFreeze() = false with a freezer hierarchy")
	}
	g := create(t, m, Limits{Pids: 100})
	state := func() string { return readBack(t, g.path(h, "freezer.state")) }
	startMix(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, frozen, err := g.Freeze(ctx); err != nil || !frozen {
		t.Fatalf("Freeze (the pause) = %v, %v", frozen, err)
	}
	thaw, frozen, err := g.Freeze(ctx)
	if err != nil || !frozen {
		t.Fatalf("Freeze of a frozen group = %v, %v", frozen, err)
	}
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != "FROZEN" {
		t.Fatalf("freezer.state after the inner thaw = %s, want FROZEN", s)
	}
	if err := g.Thaw(); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != "THAWED" {
		t.Fatalf("freezer.state after Thaw = %s, want THAWED", s)
	}

	// Frozen again, then killed: Kill thaws it so its signals land.
	if _, frozen, err := g.Freeze(ctx); err != nil || !frozen {
		t.Fatalf("Freeze = %v, %v", frozen, err)
	}
	if err := g.Kill(ctx); err != nil {
		t.Fatalf("Kill of a frozen group: %v", err)
	}
	if pids, err := g.Procs(); err != nil || len(pids) != 0 {
		t.Errorf("Procs() after Kill = %v, %v; want none", pids, err)
	}
}
