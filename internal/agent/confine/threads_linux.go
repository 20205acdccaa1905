package confine

import (
	"errors"
	"syscall"
)

// errCgo is why a cgo binary cannot be confined: Go runs a system call on
// every thread (AllThreadsSyscall) only when it knows every thread, which it
// does not once C code may have started some.
var errCgo = errors.New("confine: this binary links cgo, so Go cannot run a system call on every thread; build it with CGO_ENABLED=0")

// checkAllThreads fails with errCgo before anything irreversible happens if
// allThreads cannot work. getpid is harmless and returns the same on every
// thread, as AllThreadsSyscall demands.
func checkAllThreads() error {
	_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_GETPID, 0, 0, 0)
	if errno == syscall.ENOTSUP {
		return errCgo
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// allThreads runs a system call on every OS thread of the process, for the
// calls (prctl(PR_SET_NO_NEW_PRIVS), landlock_restrict_self) that act on the
// calling thread only. Threads created afterwards inherit the result.
func allThreads(trap, a1, a2, a3 uintptr) error {
	_, _, errno := syscall.AllThreadsSyscall(trap, a1, a2, a3)
	if errno == 0 {
		return nil
	}
	if errno == syscall.ENOTSUP {
		// Also EOPNOTSUPP, but checkAllThreads ran first and the calls made
		// here do not return it once their feature was probed.
		return errCgo
	}
	return errno
}
