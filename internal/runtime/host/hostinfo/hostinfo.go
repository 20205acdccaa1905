// Package hostinfo reads the facts of the host that bound what hutch may
// promise its sandboxes together: memory (/proc/meminfo), tasks
// (kernel.pid_max, kernel.threads-max) and CPUs. The sandbox service's
// admission and the namespace driver's parent cgroup both size themselves
// from it, with the same reserve for the control plane (Budget).
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
	mi, err := os.Open("/proc/meminfo")
	if err != nil {
		return f, fmt.Errorf("hostinfo: %w", err)
	}
	defer mi.Close()
	if f.MemoryMB, err = memTotalMB(mi); err != nil {
		return f, err
	}
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

// memTotalMB finds MemTotal (in kB) in a /proc/meminfo text.
func memTotalMB(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
		if err != nil || kb <= 0 {
			return 0, fmt.Errorf("hostinfo: /proc/meminfo: bad MemTotal %q", rest)
		}
		return kb >> 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("hostinfo: /proc/meminfo: %w", err)
	}
	return 0, fmt.Errorf("hostinfo: /proc/meminfo has no MemTotal")
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
