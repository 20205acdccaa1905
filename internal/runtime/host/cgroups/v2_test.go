package cgroups

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/agent/nsinit"
)

// TestV2 drives the v2 code on this host's cgroup2 mount, which on a hybrid
// host has no controllers: limits of absent controllers are skipped and
// reported missing; placing, moving, listing, killing and removing work.
func TestV2(t *testing.T) {
	m := newV2Manager(t)
	if m.Version() != 2 {
		t.Fatalf("Version() = %d, want 2", m.Version())
	}
	avail := m.Available()
	if got := append(slices.Clone(avail), m.Missing()...); len(got) != len(limited) {
		t.Errorf("Available() %q and Missing() %q do not cover %q", avail, m.Missing(), limited)
	}
	t.Logf("cgroup2 at %s: available %q, missing %q", m.hiers[0].mount, avail, m.Missing())

	owner := Owner{UID: 4242, GID: 4343}
	l := Limits{MemoryBytes: 64 << 20, Pids: 50, CPU: 0.5}
	g, err := m.Create(testID(), l, owner)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { removeGroup(t, g) })

	for _, sub := range []string{"", "agent", "box"} {
		f := filepath.Join(g.path(m.hiers[0], sub), "cgroup.procs")
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if int(sys.Uid) != owner.UID || int(sys.Gid) != owner.GID {
			t.Errorf("%s is owned by %d:%d, want %d:%d", f, sys.Uid, sys.Gid, owner.UID, owner.GID)
		}
	}
	checks := []struct{ controller, file, want string }{
		{Memory, "box/memory.max", "67108864"},
		{Memory, "box/memory.swap.max", "0"},
		{Memory, "memory.max", "201326592"},
		{Pids, "box/pids.max", "50"},
		{Pids, "pids.max", "178"},
		{CPU, "box/cpu.max", "50000 100000"},
		{CPU, "cpu.max", "max 100000"},
	}
	for _, c := range checks {
		path := filepath.Join(g.path(m.hiers[0]), c.file)
		if !slices.Contains(avail, c.controller) {
			if exists(path) {
				t.Errorf("%s exists though %s is missing", path, c.controller)
			}
			continue
		}
		if got := readBack(t, path); got != c.want {
			t.Errorf("%s = %s, want %s", path, got, c.want)
		}
	}

	if n, err := g.OOMKills(); err != nil || n != 0 {
		t.Errorf("OOMKills() = %d, %v; want 0", n, err)
	}
	if !slices.Contains(avail, Memory) {
		if _, err := g.MemoryUsage(); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("MemoryUsage() without memory = %v, want ErrUnsupported", err)
		}
	}

	j := g.Join()
	if j.Version != 2 || j.BoxTasks != nil || j.BoxProcs == "" || j.AgentProcs == "" {
		t.Fatalf("Join() = %+v", j)
	}
	p := start(t, "sleep", "1000")
	if err := g.Place(p.pid()); err != nil {
		t.Fatalf("Place: %v", err)
	}
	base := "/" + m.parent + "/" + g.id
	if got := cgroupOf(t, p.pid(), ""); got != base+"/box" {
		t.Errorf("after Place pid %d is in %s, want %s/box", p.pid(), got, base)
	}
	if err := nsinit.MoveProcess(j.AgentProcs, p.pid()); err != nil {
		t.Fatalf("MoveProcess(agent): %v", err)
	}
	if got := cgroupOf(t, p.pid(), ""); got != base+"/agent" {
		t.Errorf("after MoveProcess pid %d is in %s, want %s/agent", p.pid(), got, base)
	}
	q := start(t, "sleep", "1000")
	if err := g.Place(q.pid()); err != nil {
		t.Fatal(err)
	}
	pids, err := g.Procs()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{p.pid(), q.pid()}; !reflect.DeepEqual(pids, sorted(want)) {
		t.Errorf("Procs() = %v, want %v", pids, sorted(want))
	}
	if ids, err := m.List(); err != nil || !reflect.DeepEqual(ids, []string{g.id}) {
		t.Errorf("List() = %q, %v; want [%s]", ids, err, g.id)
	}
}

// TestV2Kill kills a mix of processes with cgroup.kill and, when the kernel
// has it, with the freezer fallback (cgroup.freeze, then signals).
func TestV2Kill(t *testing.T) {
	m := newV2Manager(t)
	tests := []struct {
		name     string
		killFile bool
	}{
		{"cgroup.kill", true},
		{"cgroup.freeze and signals", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := create(t, m, Limits{Pids: 100})
			killFile := ""
			if tt.killFile {
				killFile = g.path(m.hiers[0], "cgroup.kill")
				if !exists(killFile) {
					t.Skip("this kernel has no cgroup.kill (Linux < 5.14)")
				}
			}
			procs := startMix(t, g)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := g.kill(ctx, killFile); err != nil {
				t.Fatalf("kill: %v", err)
			}
			if pids, err := g.Procs(); err != nil || len(pids) != 0 {
				t.Errorf("Procs() after Kill = %v, %v; want none", pids, err)
			}
			for _, p := range procs {
				p.wait(t, 5*time.Second)
			}
			if f := g.path(m.hiers[0], "cgroup.freeze"); exists(f) && readBack(t, f) != "0" {
				t.Errorf("%s = %s after Kill, want 0", f, readBack(t, f))
			}
			if err := g.Remove(ctx); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			for _, dir := range g.dirs() {
				if exists(dir) {
					t.Errorf("%s is left after Remove", dir)
				}
			}
		})
	}
}

func sorted(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
