package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompUsable says whether this process can install the filter: the
// kernel has seccomp filters with the actions the filter returns, and this
// architecture has a syscall table.
func seccompUsable() error {
	if !haveSeccompTable {
		return fmt.Errorf("confine: no seccomp syscall table for %s", runtime.GOARCH)
	}
	// EINVAL: a kernel without CONFIG_SECCOMP.
	if _, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_SECCOMP, 0, 0); errno != 0 {
		return fmt.Errorf("confine: prctl(PR_GET_SECCOMP): %w", errno)
	}
	for _, action := range []uint32{unix.SECCOMP_RET_KILL_PROCESS, unix.SECCOMP_RET_ERRNO, unix.SECCOMP_RET_ALLOW} {
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
		if errno != 0 {
			return fmt.Errorf("confine: seccomp action %#x unavailable: %w", action, errno)
		}
	}
	return nil
}

// installFilter attaches the filter to every thread of the process at once
// (SECCOMP_FILTER_FLAG_TSYNC). It needs no_new_privs or CAP_SYS_ADMIN.
func installFilter(filter []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno == unix.EACCES {
		return fmt.Errorf("confine: seccomp filter: %w (set no_new_privs or hold CAP_SYS_ADMIN)", errno)
	}
	if errno != 0 {
		return fmt.Errorf("confine: seccomp filter: %w", errno)
	}
	if r != 0 {
		// With TSYNC a positive result is a thread that could not take the
		// filter; nothing was installed.
		return fmt.Errorf("confine: seccomp filter: thread %d could not be synchronized", r)
	}
	return nil
}
