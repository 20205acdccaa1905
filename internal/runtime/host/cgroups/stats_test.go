package cgroups

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/agent/nsinit"
)

// TestStats reads a box's figures on v1 and on this host's cgroup2 mount
// (on a hybrid host without controllers, only CPU): its limits as set, a
// busy loop's CPU time rising, its memory and tasks, and, once the loop is
// gone, CPU time standing still.
func TestStats(t *testing.T) {
	for _, mt := range []struct {
		name string
		new  func(*testing.T) *Manager
	}{
		{"v1", newV1Manager},
		{"v2", newV2Manager},
	} {
		t.Run(mt.name, func(t *testing.T) {
			m := mt.new(t)
			g := create(t, m, Limits{MemoryBytes: 64 << 20, Pids: 50})
			st := readStats(t, g)
			var want []string
			if _, ok := m.find(cpuacct); m.version == 1 && !ok {
				want = append(want, CPU)
			}
			for _, c := range []string{Memory, Pids} {
				if _, ok := m.find(c); !ok {
					want = append(want, c)
				}
			}
			if !slices.Equal(st.Missing, want) {
				t.Fatalf("Missing = %q, want %q", st.Missing, want)
			}
			if st.CPUNS != 0 || st.Pids != 0 {
				t.Errorf("an empty box: %+v; want no CPU time and no tasks", st)
			}
			if _, ok := m.find(Memory); ok && st.MemoryLimit != 64<<20 {
				t.Errorf("MemoryLimit = %d, want %d", st.MemoryLimit, 64<<20)
			}
			if _, ok := m.find(Pids); ok && st.PidsLimit != 50 {
				t.Errorf("PidsLimit = %d, want 50", st.PidsLimit)
			}

			// The loop's memory is what it allocates in the box: a task
			// that moves takes none of its pages' charges along, so the
			// holding shell's stay where it was made. Only its exec
			// allocates in the box, and before that the shell's own CPU
			// time rises there too, while the box may hold nothing but
			// the per-CPU charge cache (64 pages), which drains to 0.
			loop := startHeld(t, "sh", "-c", "while :; do :; done")
			toBox(t, g, loop.pid())
			loop.release(t)
			loop.waitExec(t)
			busy := waitStats(t, g, func(s Stats) bool { return s.CPUNS > st.CPUNS })
			later := waitStats(t, g, func(s Stats) bool { return s.CPUNS > busy.CPUNS })
			t.Logf("busy: %+v; later: %+v", busy, later)
			if _, ok := m.find(Pids); ok && later.Pids < 1 {
				t.Errorf("Pids = %d with a loop running", later.Pids)
			}
			if _, ok := m.find(Memory); ok && (later.MemoryBytes <= 0 || later.MemoryPeak != 0 && later.MemoryPeak < later.MemoryBytes) {
				t.Errorf("memory %d, peak %d with a loop running", later.MemoryBytes, later.MemoryPeak)
			}

			_ = loop.cmd.Process.Kill()
			loop.wait(t, 10*time.Second)
			idle := readStats(t, g)
			time.Sleep(50 * time.Millisecond)
			if again := readStats(t, g); again.CPUNS != idle.CPUNS || idle.CPUNS < later.CPUNS {
				t.Errorf("CPU time with the loop gone: %d, then %d; want it standing at %d or more", idle.CPUNS, again.CPUNS, later.CPUNS)
			}
		})
	}
}

// TestStatsUnlimited: a box without limits reads 0 for each.
func TestStatsUnlimited(t *testing.T) {
	m := newV1Manager(t)
	st := readStats(t, create(t, m, Limits{}))
	if st.MemoryLimit != 0 || st.PidsLimit != 0 {
		t.Errorf("limits of an unlimited box: memory %d, pids %d; want 0", st.MemoryLimit, st.PidsLimit)
	}
}

// TestV1GroupWithoutCPUAccounting: a group made by a hutch that did not
// use cpuacct still takes its agent at a start, and says its CPU time is
// unknown.
func TestV1GroupWithoutCPUAccounting(t *testing.T) {
	m := newV1Manager(t)
	if h, ok := m.find(cpuacct); !ok || !h.accountingOnly() {
		t.Skip("no hierarchy of cpuacct alone on this host")
	}
	older := *m
	older.hiers = slices.DeleteFunc(slices.Clone(m.hiers), func(h hierarchy) bool { return h.has(cpuacct) })
	made := create(t, &older, Limits{Pids: 20})
	g, err := m.Open(made.id)
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, "sleep", "1000")
	if err := g.Place(p.pid()); err != nil {
		t.Fatalf("Place: %v", err)
	}
	st := readStats(t, g)
	if !slices.Contains(st.Missing, CPU) {
		t.Errorf("Missing = %q, want cpu in it", st.Missing)
	}
}

// toBox moves process pid into g's box, as the agent moves its commands.
func toBox(t *testing.T, g *Group, pid int) {
	t.Helper()
	j := g.Join()
	var err error
	if j.Version == 2 {
		err = nsinit.MoveProcess(j.BoxProcs, pid)
	} else {
		err = nsinit.JoinThread(j.BoxTasks, pid)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func readStats(t *testing.T, g *Group) Stats {
	t.Helper()
	st, err := g.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// waitStats reads g's stats until ok says they are what the test waits
// for.
func waitStats(t *testing.T, g *Group, ok func(Stats) bool) Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		st := readStats(t, g)
		if ok(st) {
			return st
		}
		if sleep(ctx, 10*time.Millisecond) != nil {
			t.Fatalf("stats stay at %+v", st)
		}
	}
}
