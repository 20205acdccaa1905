package cgroups

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// parentFiles are the files CapParent writes in a parent group, and what
// each reads back for l, by version.
func parentFiles(version int, memory, pids string) []struct{ controller, file, want string } {
	if version == 2 {
		return []struct{ controller, file, want string }{
			{Memory, "memory.max", memory},
			{Memory, "memory.swap.max", "0"},
			{Pids, "pids.max", pids},
		}
	}
	return []struct{ controller, file, want string }{
		{Memory, "memory.limit_in_bytes", memory},
		{Memory, "memory.memsw.limit_in_bytes", memory},
		{Pids, "pids.max", pids},
	}
}

// TestCapParentV1: the parent hutch makes is marked as its own and capped
// (memory, memory plus swap, pids), capped again at the next start with
// new limits, and its sandboxes are made under it as before.
func TestCapParentV1(t *testing.T) {
	m := newV1Manager(t)
	for _, step := range []struct {
		l           Limits
		memory, pid string
	}{
		{Limits{MemoryBytes: 1 << 30, Pids: 1000}, "1073741824", "1000"},
		{Limits{MemoryBytes: 2 << 30, Pids: 500}, "2147483648", "500"}, // a later start, other reserves
	} {
		got, err := m.CapParent(step.l)
		if err != nil {
			t.Fatalf("CapParent(%+v): %v", step.l, err)
		}
		if len(got.Foreign) > 0 || len(got.Unmarked) > 0 {
			t.Fatalf("CapParent on a parent it made: %+v", got)
		}
		for _, c := range parentFiles(1, step.memory, step.pid) {
			h, ok := m.find(c.controller)
			if !ok {
				continue
			}
			dir := filepath.Join(h.mount, m.parent)
			if !slices.Contains(got.Capped, dir) {
				t.Errorf("%s is not among the capped %q", dir, got.Capped)
			}
			if path := filepath.Join(dir, c.file); exists(path) {
				if v := readBack(t, path); v != c.want {
					t.Errorf("%s = %s, want %s", path, v, c.want)
				}
			}
		}
	}
	g := create(t, m, Limits{MemoryBytes: 64 << 20, Pids: 50})
	if h, ok := m.find(Memory); ok {
		if v := readBack(t, filepath.Join(g.path(h, "box"), "memory.limit_in_bytes")); v != "67108864" {
			t.Errorf("a sandbox under the capped parent: box memory %s", v)
		}
	}
}

// TestCapParentForeign: a parent group someone else made is never
// changed; CapParent names it.
func TestCapParentForeign(t *testing.T) {
	m := newV1Manager(t)
	for _, h := range m.hiers {
		if err := os.Mkdir(filepath.Join(h.mount, m.parent), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.CapParent(Limits{MemoryBytes: 1 << 30, Pids: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Capped) != 0 || len(got.Foreign) != len(m.hiers) {
		t.Fatalf("CapParent of a foreign parent = %+v; want every hierarchy's foreign, none capped", got)
	}
	for _, c := range parentFiles(1, unlimitedV1, "max") {
		if h, ok := m.find(c.controller); ok {
			if path := filepath.Join(h.mount, m.parent, c.file); exists(path) {
				if v := readBack(t, path); v != c.want {
					t.Errorf("foreign %s = %s, want it untouched (%s)", path, v, c.want)
				}
			}
		}
	}
}

// TestCapParentV2Fake drives the v2 path on a fake cgroup2 root (plain
// files in a temporary directory): the root's children get the
// controllers, a parent carrying hutch's mark is capped, and one without
// it is left alone.
func TestCapParentV2Fake(t *testing.T) {
	requireRoot(t) // trusted.* attributes
	for _, marked := range []bool{true, false} {
		root := t.TempDir()
		parent := testParent()
		dir := filepath.Join(root, parent)
		if err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"memory.max", "memory.swap.max", "pids.max"} {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if marked {
			if err := unix.Setxattr(dir, ownerAttr, []byte(ownerMark), 0); err != nil {
				t.Skipf("this file system takes no trusted.* attributes: %v", err)
			}
		}
		m := &Manager{version: 2, parent: parent, hiers: []hierarchy{{mount: root, controllers: []string{Memory, Pids}}}}
		got, err := m.CapParent(Limits{MemoryBytes: 3 << 30, Pids: 30000})
		if err != nil {
			t.Fatalf("marked %v: %v", marked, err)
		}
		if v := readBack(t, filepath.Join(root, "cgroup.subtree_control")); v != "+memory +pids" {
			t.Errorf("root's subtree_control = %q, want +memory +pids", v)
		}
		want := parentFiles(2, "3221225472", "30000")
		if !marked {
			want = parentFiles(2, "", "")
			want[1].want = ""
			if len(got.Foreign) != 1 || len(got.Capped) != 0 {
				t.Errorf("unmarked parent: %+v; want it foreign", got)
			}
		} else if len(got.Capped) != 1 || got.Capped[0] != dir {
			t.Errorf("marked parent: %+v; want it capped", got)
		}
		for _, c := range want {
			if v := readBack(t, filepath.Join(dir, c.file)); v != c.want {
				t.Errorf("marked %v: %s = %q, want %q", marked, c.file, v, c.want)
			}
		}
	}
}

// TestCapParentV2 makes and marks the parent on this host's real cgroup2
// mount and caps whatever of memory and pids it offers (on a hybrid host,
// nothing).
func TestCapParentV2(t *testing.T) {
	m := newV2Manager(t)
	got, err := m.CapParent(Limits{MemoryBytes: 1 << 30, Pids: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Foreign) != 0 {
		t.Fatalf("CapParent = %+v", got)
	}
	dir := filepath.Join(m.hiers[0].mount, m.parent)
	if len(got.Unmarked) == 0 {
		if owned, marked, err := claimParent(dir); err != nil || !owned || !marked {
			t.Errorf("the parent made is not recognised as hutch's at the next start: %v %v %v", owned, marked, err)
		}
	}
	for _, c := range parentFiles(2, "1073741824", "1000") {
		path := filepath.Join(dir, c.file)
		if !m.hiers[0].has(c.controller) || !exists(path) {
			continue
		}
		if v := readBack(t, path); v != c.want {
			t.Errorf("%s = %s, want %s", path, v, c.want)
		}
	}
}
