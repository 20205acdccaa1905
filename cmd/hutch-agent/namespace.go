package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hutchdev/hutch/internal/agent/envelope"
)

// ignoreSignals catches every signal and drops it (SIGCHLD still reaches
// the reaper, which listens for it too), but passes SIGTERM on to term,
// which the caller may leave unread. Caught, not ignored: an ignored
// signal would stay ignored in every command the agent starts.
func ignoreSignals(term chan<- os.Signal) {
	c := make(chan os.Signal, 16)
	signal.Notify(c)
	go func() {
		for s := range c {
			if s == syscall.SIGTERM {
				select {
				case term <- s:
				default:
				}
			}
		}
	}()
}

// fileUser makes the agent touch files as the sandbox's user, on every
// thread: what the file API creates belongs to that user, and it may read
// and write only what that user may. setfsuid to a non-zero id also drops
// the file-system capabilities (CAP_DAC_OVERRIDE and the like) from the
// agent's effective set; the capabilities it needs to start commands as
// the user stay.
func fileUser(r *envelope.RunAs) error {
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_SETFSGID, uintptr(r.GID), 0, 0); errno != 0 {
		return fmt.Errorf("setfsgid(%d) on every thread: %w", r.GID, errno)
	}
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_SETFSUID, uintptr(r.UID), 0, 0); errno != 0 {
		return fmt.Errorf("setfsuid(%d) on every thread: %w", r.UID, errno)
	}
	// setfsuid and setfsgid report no error, only the previous id: asking
	// again tells whether the change took.
	uid, _, _ := syscall.AllThreadsSyscall(syscall.SYS_SETFSUID, uintptr(r.UID), 0, 0)
	gid, _, _ := syscall.AllThreadsSyscall(syscall.SYS_SETFSGID, uintptr(r.GID), 0, 0)
	if uint32(uid) != r.UID || uint32(gid) != r.GID {
		return fmt.Errorf("file-system ids are %d:%d, want %d:%d", uid, gid, r.UID, r.GID)
	}
	return nil
}
