package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// OOMKills counts the processes the kernel killed in box for want of
// memory: "oom_kill" of memory.oom_control on v1 and of memory.events on
// v2. It is 0 without the memory controller.
func (g *Group) OOMKills() (uint64, error) {
	h, ok := g.m.find(Memory)
	if !ok {
		return 0, nil
	}
	file := "memory.oom_control"
	if g.m.version == 2 {
		file = "memory.events"
	}
	return readKey(g.path(h, "box", file), "oom_kill")
}

// MemoryUsage returns the memory the whole sandbox (agent and box) uses, in
// bytes: memory.usage_in_bytes of <id> on v1, memory.current on v2. Without
// the memory controller it fails with errors.ErrUnsupported.
func (g *Group) MemoryUsage() (int64, error) {
	h, ok := g.m.find(Memory)
	if !ok {
		return 0, fmt.Errorf("cgroups: memory usage: %w", errors.ErrUnsupported)
	}
	file := "memory.usage_in_bytes"
	if g.m.version == 2 {
		file = "memory.current"
	}
	return readInt(g.path(h, file))
}

// Procs lists every process in <id> and the groups below it, in any
// hierarchy, sorted. A group that does not exist has none.
func (g *Group) Procs() ([]int, error) {
	var pids []int
	for _, dir := range g.dirs() {
		err := walkGroups(dir, func(d string) error {
			s, err := readFile(filepath.Join(d, "cgroup.procs"))
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			if err != nil {
				return err
			}
			for _, f := range strings.Fields(s) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					return fmt.Errorf("cgroups: %s/cgroup.procs: %w", d, err)
				}
				pids = append(pids, pid)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// walkGroups calls fn for dir and every group below it, children before
// their parent (the order rmdir needs). A dir that does not exist, or a
// child that vanishes meanwhile, is skipped.
func walkGroups(dir string, fn func(dir string) error) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := walkGroups(filepath.Join(dir, e.Name()), fn); err != nil {
				return err
			}
		}
	}
	return fn(dir)
}
