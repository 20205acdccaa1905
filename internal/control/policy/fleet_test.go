package policy

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// countingStore counts the whole listings of sandboxes.
type countingStore struct {
	store.Store
	all int
}

func (c *countingStore) AllSandboxes(ctx context.Context, states ...api.SandboxState) ([]*store.Sandbox, error) {
	c.all++
	return c.Store.AllSandboxes(ctx, states...)
}

// The fleet the policies tick over follows every change (create, pause,
// resume, stop, destroy) from the records written since the last tick,
// and lists the whole only once per resyncEvery: a tick's cost is what
// changed, not the number of sandboxes.
func TestFleetFollowsChanges(t *testing.T) {
	var cs *countingStore
	f := newFixture(t, func(c *sandbox.Config) {
		cs = &countingStore{Store: c.Store}
		c.Store = cs
	})
	fl := &fleet{svc: f.svc}
	sys := tenancy.System(context.Background())
	now := time.Now()
	ids := func(recs []*store.Sandbox) []string {
		out := []string{}
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}
	check := func(step string, wantRunning, wantPaused, wantStopped []string) {
		t.Helper()
		now = now.Add(time.Second)
		if err := fl.refresh(sys, now); err != nil {
			t.Fatal(err)
		}
		running, paused, stopped := fl.byState()
		for _, c := range []struct {
			name      string
			got, want []string
		}{{"running", ids(running), wantRunning}, {"paused", ids(paused), wantPaused}, {"stopped", ids(stopped), wantStopped}} {
			slices.Sort(c.want)
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s: %s = %v; want %v", step, c.name, c.got, c.want)
			}
		}
	}
	a, b := f.create(t), f.create(t)
	check("first tick", []string{a.ID, b.ID}, nil, nil)
	if _, err := f.svc.Pause(f.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	c := f.create(t)
	check("a paused, c made", []string{b.ID, c.ID}, []string{a.ID}, nil)
	if _, err := f.svc.Stop(f.ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Destroy(f.ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	check("b stopped, c destroyed", nil, []string{a.ID}, []string{b.ID})
	if _, err := f.svc.Resume(f.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	check("a resumed", []string{a.ID}, nil, []string{b.ID})
	if cs.all != 1 {
		t.Errorf("%d whole listings over five ticks within %s; want 1, the first", cs.all, resyncEvery)
	}
	now = now.Add(resyncEvery)
	check("a resync", []string{a.ID}, nil, []string{b.ID})
	if cs.all != 2 {
		t.Errorf("%d whole listings once %s passed; want 2", cs.all, resyncEvery)
	}
}
