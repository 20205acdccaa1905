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

// Stats is what a sandbox's commands (its box) use now, and the limits they
// run under; the agent's own use is left out. A zero limit is none; a zero
// MemoryPeak is unknown (v2 before Linux 5.19).
type Stats struct {
	CPUNS                                uint64 // CPU time used since the box was made
	MemoryBytes, MemoryPeak, MemoryLimit int64
	Pids, PidsLimit                      int64 // tasks: processes and threads
	// Missing names what this host cannot tell of the group: "cpu",
	// "memory" or "pids". Those figures are zero.
	Missing []string
}

// noLimit is where a v1 limit read back means none: the kernel writes the
// largest page-aligned int64 for "-1".
const noLimit = 1 << 62

// Stats reads what the box uses: its CPU time (cpuacct.usage on v1;
// usage_usec of cpu.stat on v2, which every group has, cpu controller or
// not), its memory (usage; peak, memory.max_usage_in_bytes on v1 and
// memory.peak on v2 where the kernel has it; limit) and its tasks
// (pids.current and pids.max). A controller the host lacks is named in
// Missing, and so is cpuacct in a group an older hutch made (see Place).
func (g *Group) Stats() (Stats, error) {
	var st Stats
	var err error
	if g.m.version == 2 {
		var usec uint64
		usec, err = readKey(g.path(g.m.hiers[0], "box", "cpu.stat"), "usage_usec")
		st.CPUNS = usec * 1000
	} else if h, ok := g.m.find(cpuacct); ok && exists(g.path(h, "box")) {
		var ns int64
		ns, err = readInt(g.path(h, "box", "cpuacct.usage"))
		st.CPUNS = uint64(ns)
	} else {
		st.Missing = append(st.Missing, CPU)
	}
	if err != nil {
		return Stats{}, err
	}
	if h, ok := g.m.find(Memory); ok {
		box := g.path(h, "box")
		usage, peak, limit := "memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.limit_in_bytes"
		if g.m.version == 2 {
			usage, peak, limit = "memory.current", "memory.peak", "memory.max"
		}
		if st.MemoryBytes, err = readInt(filepath.Join(box, usage)); err != nil {
			return Stats{}, err
		}
		if f := filepath.Join(box, peak); exists(f) {
			if st.MemoryPeak, err = readInt(f); err != nil {
				return Stats{}, err
			}
		}
		if st.MemoryLimit, err = readLimit(filepath.Join(box, limit)); err != nil {
			return Stats{}, err
		}
	} else {
		st.Missing = append(st.Missing, Memory)
	}
	if h, ok := g.m.find(Pids); ok {
		box := g.path(h, "box")
		if st.Pids, err = readInt(filepath.Join(box, "pids.current")); err != nil {
			return Stats{}, err
		}
		if st.PidsLimit, err = readLimit(filepath.Join(box, "pids.max")); err != nil {
			return Stats{}, err
		}
	} else {
		st.Missing = append(st.Missing, Pids)
	}
	return st, nil
}

// readLimit reads a limit file: a number, or "max" (and on v1 a number
// from noLimit up) for none, which is 0.
func readLimit(path string) (int64, error) {
	s, err := readFile(path)
	if err != nil || s == "max" {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroups: read %s: %w", path, err)
	}
	if n >= noLimit {
		return 0, nil
	}
	return n, nil
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
