package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/bench/internal/stat"
)

// idleCPU is what a full fleet left idle costs: the CPU its sandboxes
// (agents and commands, read from their cgroups) and this process (the
// server; the benchmark's client waits meanwhile) used over a window, each
// as a share of one CPU.
type idleCPU struct {
	window          time.Duration
	fleet, server   float64 // CPUs
	counted, missed int     // sandboxes whose CPU time could and could not be read
}

// measureIdleCPU leaves the sandboxes ids of cgroup parent idle for window
// and reads what they and this process used meanwhile.
func measureIdleCPU(parent string, ids []string, window time.Duration) (r idleCPU) {
	r.window = window
	before := make([]int64, len(ids))
	for i, id := range ids {
		before[i] = sandboxCPU(parent, id)
	}
	self := stat.SelfCPU()
	time.Sleep(window)
	server := stat.SelfCPU() - self
	var fleetNS int64
	for i, id := range ids {
		after := sandboxCPU(parent, id)
		if before[i] < 0 || after < 0 {
			r.missed++
			continue
		}
		fleetNS += after - before[i]
		r.counted++
	}
	r.fleet = float64(fleetNS) / float64(window)
	r.server = float64(server) / float64(window)
	return r
}

// sandboxCPU returns the CPU time, in ns, of sandbox id's cgroup (the
// namespace driver's <parent>/<id>: its agent and its commands), v1 or v2;
// -1 when there is none.
func sandboxCPU(parent, id string) int64 {
	if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", parent, id, "cpuacct.usage")); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return n
		}
	}
	if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", parent, id, "cpu.stat")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					return n * 1000
				}
			}
		}
	}
	return -1
}

// String is the report's sentence.
func (r idleCPU) String() string {
	s := fmt.Sprintf("Left idle for %s, the %d sandboxes used %.1f %% of a CPU together (%.0f µs a second each) and the server %.1f %%",
		r.window, r.counted, 100*r.fleet, 1e6*r.fleet/float64(max(r.counted, 1)), 100*r.server)
	if r.missed > 0 {
		s += fmt.Sprintf("; %d sandboxes' CPU time could not be read", r.missed)
	}
	return s + "."
}
