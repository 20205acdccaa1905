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

// DropBounding drops every capability c does not keep from the bounding
// set of the calling OS thread, which the caller has locked: processes
// forked from that thread inherit it. (The bounding set is per thread, and
// dropping on every thread of a Go program costs a stop of the world per
// capability; hutch-agent forks every command from one thread.) The
// thread's own effective capabilities are left as they are. It needs
// CAP_SETPCAP.
func DropBounding(c *Caps) error {
	if err := c.Validate(); err != nil {
		return err
	}
	last, err := lastCap()
	if err != nil {
		return err
	}
	for _, n := range c.dropped(last) {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(n), 0, 0, 0); err != nil {
			return fmt.Errorf("confine: prctl(PR_CAPBSET_DROP, %d): %w", n, err)
		}
	}
	return nil
}
