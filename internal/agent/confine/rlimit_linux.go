package confine

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// rlimitResources maps every name in rlimitNames to its resource.
var rlimitResources = map[string]int{
	"nproc":   unix.RLIMIT_NPROC,
	"as":      unix.RLIMIT_AS,
	"nofile":  unix.RLIMIT_NOFILE,
	"fsize":   unix.RLIMIT_FSIZE,
	"core":    unix.RLIMIT_CORE,
	"cpu":     unix.RLIMIT_CPU,
	"stack":   unix.RLIMIT_STACK,
	"memlock": unix.RLIMIT_MEMLOCK,
	"data":    unix.RLIMIT_DATA,
}

// applyRlimits sets each limit for the process (rlimits are per process,
// not per thread). It goes through syscall.Setrlimit on purpose: for
// RLIMIT_NOFILE that also drops the soft limit Go saved at startup, which it
// would otherwise restore in every child it starts, undoing the limit.
func applyRlimits(rs []Rlimit) error {
	for _, r := range rs {
		res, ok := rlimitResources[r.Resource]
		if !ok {
			return fmt.Errorf("confine: unknown rlimit %q", r.Resource)
		}
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: r.Cur, Max: r.Max}); err != nil {
			return fmt.Errorf("confine: setrlimit(%s, cur=%d, max=%d): %w", r.Resource, r.Cur, r.Max, err)
		}
	}
	return nil
}

// Prlimit sets rs on the process pid (prlimit(2)): how the agent limits a
// command it has just started without limiting itself. The kernel allows
// it when the two processes' user and group ids match, or with
// CAP_SYS_RESOURCE; the error otherwise is EPERM.
func Prlimit(pid int, rs []Rlimit) error {
	for _, r := range rs {
		res, ok := rlimitResources[r.Resource]
		if !ok {
			return fmt.Errorf("confine: unknown rlimit %q", r.Resource)
		}
		if err := unix.Prlimit(pid, res, &unix.Rlimit{Cur: r.Cur, Max: r.Max}, nil); err != nil {
			return fmt.Errorf("confine: prlimit(%d, %s, cur=%d, max=%d): %w", pid, r.Resource, r.Cur, r.Max, err)
		}
	}
	return nil
}

// PrlimitArgs is the start of a prlimit(1) command line (util-linux) that
// sets rs on itself and then runs the program that follows "--".
func PrlimitArgs(prlimit string, rs []Rlimit) []string {
	args := []string{prlimit}
	for _, r := range rs {
		args = append(args, fmt.Sprintf("--%s=%d:%d", r.Resource, r.Cur, r.Max))
	}
	return append(args, "--")
}
