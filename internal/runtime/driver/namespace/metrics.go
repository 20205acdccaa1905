package namespace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

var _ driver.Meter = (*Driver)(nil)

// Stats reads what a running or paused sandbox uses. Its commands' CPU
// time, memory and tasks are its box cgroup's (the agent's own use is left
// out); without cgroups (rootless) they are added up from /proc over every
// process of its pid namespace but the agent. Its network is what crossed
// the interfaces of its network namespace: lo alone, so every byte its
// sockets exchanged, through the egress forwarder, with previews and
// between its own processes, each counted both ways.
func (d *Driver) Stats(ctx context.Context, h driver.Handle) (driver.Stats, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Stats{}, err
	}
	if !d.alive(st) {
		return driver.Stats{}, errdefs.Conflict("sandbox_not_running", "the sandbox's agent is not running")
	}
	out, err := d.usage(st)
	if err != nil {
		return driver.Stats{}, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/dev", st.Pid))
	if err == nil {
		err = readNetDev(f, &out)
		f.Close()
	}
	// Alive still, the agent was the one whose /proc was read: its pid
	// was not reused meanwhile.
	if !d.alive(st) {
		return driver.Stats{}, errdefs.Conflict("sandbox_not_running", "the sandbox's agent is not running")
	}
	if err != nil {
		return driver.Stats{}, fmt.Errorf("read the sandbox's network counters: %w", err)
	}
	return out, nil
}

// usage is the CPU time, memory and tasks of the sandbox's commands.
func (d *Driver) usage(st state) (driver.Stats, error) {
	if d.cg != nil && st.Cgroup != "" {
		g, err := d.cg.Open(st.Cgroup)
		if err != nil {
			return driver.Stats{}, err
		}
		cs, err := g.Stats()
		if err != nil {
			return driver.Stats{}, fmt.Errorf("read the sandbox's cgroups: %w", err)
		}
		return driver.Stats{
			CPUUsageNS:  cs.CPUNS,
			MemoryBytes: cs.MemoryBytes, MemoryPeak: cs.MemoryPeak, MemoryLimit: cs.MemoryLimit,
			Pids: int(cs.Pids), PidsLimit: int(cs.PidsLimit),
			Unsupported: cs.Missing,
		}, nil
	}
	if st.PidNS == 0 {
		return driver.Stats{Unsupported: []string{"cpu", "memory", "pids"}}, nil
	}
	u, err := hostproc.Measure(func(p hostproc.Proc) bool { return hostproc.PidNS(p.Pid) == st.PidNS }, st.Pid)
	if err != nil {
		return driver.Stats{}, fmt.Errorf("read the sandbox's processes: %w", err)
	}
	return driver.Stats{CPUUsageNS: u.CPUNS, MemoryBytes: u.RSSBytes, Pids: u.Tasks}, nil
}

// readNetDev adds the counters of every interface in a /proc/<pid>/net/dev
// text to st: two header lines, then one line per interface,
//
//	lo: rx_bytes rx_packets errs drop fifo frame compressed multicast tx_bytes tx_packets …
func readNetDev(r io.Reader, st *driver.Stats) error {
	sc := bufio.NewScanner(r)
	for n := 0; sc.Scan(); n++ {
		if n < 2 {
			continue
		}
		name, counters, ok := strings.Cut(sc.Text(), ":")
		f := strings.Fields(counters)
		if !ok || len(f) < 10 {
			return fmt.Errorf("malformed net/dev line %q", sc.Text())
		}
		var v [4]uint64
		for i, col := range []int{0, 1, 8, 9} {
			var err error
			if v[i], err = strconv.ParseUint(f[col], 10, 64); err != nil {
				return fmt.Errorf("net/dev counter of %s: %w", strings.TrimSpace(name), err)
			}
		}
		st.RxBytes += v[0]
		st.RxPackets += v[1]
		st.TxBytes += v[2]
		st.TxPackets += v[3]
	}
	return sc.Err()
}
