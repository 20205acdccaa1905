package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lastCap is the highest capability this kernel knows.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("confine: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("confine: cap_last_cap: %w", err)
	}
	return n, nil
}

// dropBounding drops caps from the bounding set of every thread
// (PR_CAPBSET_DROP acts on the calling thread only).
func dropBounding(caps []int) error {
	for _, n := range caps {
		if err := allThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(n), 0); err != nil {
			return fmt.Errorf("confine: prctl(PR_CAPBSET_DROP, %d) on every thread: %w", n, err)
		}
	}
	return nil
}
