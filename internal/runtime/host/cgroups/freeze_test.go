package cgroups

import (
	"context"
	"errors"
	"path/filepath"
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

// TestFreezeStarved freezes a group whose processes get next to no CPU:
// a task stops only once it is scheduled, and these are held off the CPU
// for seconds at a time. Freeze waits for them as long as its context
// allows, where it once gave up after a second.
func TestFreezeStarved(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(*testing.T) *Manager
	}{{"v1", newV1Manager}, {"v2", newV2Manager}} {
		t.Run(c.name, func(t *testing.T) {
			m := c.new(t)
			if !m.CanFreeze() {
				t.Skip("no freezer")
			}
			h, ok := m.find(CPU)
			if !ok {
				t.Skip("no cpu controller")
			}
			g := create(t, m, Limits{Pids: 100, CPU: minCPU})
			// The least CPU a group can be given: 1 ms a second, which
			// the busy loops spend at once. (The API's least, minCPU,
			// is 1 ms in each 100 ms period.)
			box := g.path(h, "box")
			starve, feed := []string{"cpu.cfs_period_us", "1000000", "cpu.cfs_quota_us", "1000"}, []string{"cpu.cfs_quota_us", "-1"}
			if m.version == 2 {
				starve, feed = []string{"cpu.max", "1000 1000000"}, []string{"cpu.max", "max"}
			}
			for i := 0; i < len(starve); i += 2 {
				if err := writeFile(filepath.Join(box, starve[i]), starve[i+1]); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				p := startHeld(t, "sh", "-c", "while :; do :; done")
				toBox(t, g, p.pid())
				p.release(t)
			}
			// Thawed and fed again before the loops are killed, so they
			// die without waiting for CPU.
			t.Cleanup(func() {
				if err := errors.Join(g.Thaw(), writeFile(filepath.Join(box, feed[0]), feed[1])); err != nil {
					t.Error(err)
				}
			})
			deadline := time.Now().Add(10 * time.Second)
			for throttled(t, box) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the busy loops were not throttled in 10 s")
				}
				time.Sleep(10 * time.Millisecond)
			}

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			began := time.Now()
			_, frozen, err := g.Freeze(ctx)
			if err != nil || !frozen {
				t.Fatalf("Freeze of a starved group = %v, %v after %v", frozen, err, time.Since(began))
			}
			t.Logf("frozen in %v", time.Since(began))
		})
	}
}

// throttled is how often the group at dir has been held off the CPU for
// its quota (cpu.stat nr_throttled).
func throttled(t *testing.T, dir string) uint64 {
	t.Helper()
	n, err := readKey(filepath.Join(dir, "cpu.stat"), "nr_throttled")
	if err != nil {
		t.Fatal(err)
	}
	return n
}
