// Package hostinfo reads the facts of the host that bound what hutch may
// promise its sandboxes together: memory (/proc/meminfo), tasks
// (kernel.pid_max, kernel.threads-max) and CPUs. The sandbox service's
// admission and the namespace driver's parent cgroup both size themselves
// from it, with the same reserve for the control plane (Budget); the
// memory policy reads the memory available now (Memory).
package hostinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Facts are the host's totals.
type Facts struct {
	MemoryMB   int // MemTotal, in MiB
	PidMax     int // kernel.pid_max: the highest pid plus one
	ThreadsMax int // kernel.threads-max: tasks the kernel will make
	CPUs       int // runtime.NumCPU: the CPUs this process may use
}

// Read reads the facts of this host.
func Read() (Facts, error) {
	f := Facts{CPUs: runtime.NumCPU()}
	_, total, err := Memory()
	if err != nil {
		return f, err
	}
	f.MemoryMB = int(total >> 20)
	if f.PidMax, err = readInt("/proc/sys/kernel/pid_max"); err != nil {
		return f, err
	}
	if f.ThreadsMax, err = readInt("/proc/sys/kernel/threads-max"); err != nil {
		return f, err
	}
	return f, nil
}

// Tasks is how many processes and threads the host can hold at once: the
// smaller of pid_max and threads-max.
func (f Facts) Tasks() int { return min(f.PidMax, f.ThreadsMax) }

// Budget is what sandboxes together may hold of a host's total: the total
// less the control plane's reserve, but never less than half the total,
// so a reserve too large for a small host still leaves sandboxes room.
func Budget(total, reserve int) int {
	return max(total-max(reserve, 0), total/2)
}

// Memory reads the host's available memory (MemAvailable) and its total
// (MemTotal) in bytes from /proc/meminfo.
func Memory() (available, total uint64, err error) {
	mi, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, fmt.Errorf("hostinfo: %w", err)
	}
	defer mi.Close()
	return meminfo(mi)
}

// meminfo finds MemAvailable and MemTotal (in kB) in a /proc/meminfo
// text, in bytes.
func meminfo(r io.Reader) (available, total uint64, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "MemTotal" && name != "MemAvailable") {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("hostinfo: /proc/meminfo: bad %s %q", name, rest)
		}
		if name == "MemTotal" {
			total = kb << 10
		} else {
			available = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("hostinfo: /proc/meminfo: %w", err)
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("hostinfo: /proc/meminfo has no MemTotal")
	}
	return available, total, nil
}

// readInt reads a file holding one positive integer.
func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("hostinfo: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("hostinfo: %s: not a positive number: %q", path, strings.TrimSpace(string(b)))
	}
	return n, nil
}
