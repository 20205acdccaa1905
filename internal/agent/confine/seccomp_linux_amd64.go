package confine

import "golang.org/x/sys/unix"

const (
	haveSeccompTable = true
	auditArch        = unix.AUDIT_ARCH_X86_64
	// x32SyscallBit (__X32_SYSCALL_BIT) marks the x32 ABI's syscalls, which
	// share AUDIT_ARCH_X86_64 with the native ones; the filter kills them.
	x32SyscallBit = 0x40000000
)

// archAllowed adds to allowedSyscalls the x86_64 calls that arm64 has only
// in their *at or newer forms, which glibc, Go and older binaries still
// make here, and arch_prctl (thread pointer, CET shadow stack). Left out:
// modify_ldt and set/get_thread_area (16- and 32-bit segments; kernels may
// be built without modify_ldt, so programs cope with ENOSYS), and the
// numbers the kernel no longer implements (sysfs, ustat, *_module
// queries, getpmsg …).
var archAllowed = []uint32{
	unix.SYS_OPEN, unix.SYS_CREAT, unix.SYS_STAT, unix.SYS_LSTAT, unix.SYS_ACCESS,
	unix.SYS_READLINK, unix.SYS_MKDIR, unix.SYS_RMDIR, unix.SYS_RENAME,
	unix.SYS_LINK, unix.SYS_UNLINK, unix.SYS_SYMLINK,
	unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN,
	unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT, unix.SYS_GETDENTS,
	unix.SYS_PIPE, unix.SYS_DUP2, unix.SYS_POLL, unix.SYS_SELECT,
	unix.SYS_EPOLL_CREATE, unix.SYS_EPOLL_WAIT, unix.SYS_EVENTFD, unix.SYS_SIGNALFD,
	unix.SYS_INOTIFY_INIT,
	unix.SYS_FORK, unix.SYS_VFORK, unix.SYS_PAUSE, unix.SYS_ALARM, unix.SYS_TIME,
	unix.SYS_GETPGRP, unix.SYS_ARCH_PRCTL,
	// Made only by the trampolines the kernel maps when the host traces a
	// program with uprobes; the kernel kills any other caller, and newer
	// kernels let them past seccomp anyway. Refused, a traced program
	// would crash.
	unix.SYS_URETPROBE, unix.SYS_UPROBE,
}

// archDenied adds the x86_64-only calls to deniedSyscalls: port I/O and
// legacy interfaces.
var archDenied = []uint32{
	unix.SYS_IOPL,
	unix.SYS_IOPERM,
	unix.SYS_USELIB,
	unix.SYS__SYSCTL,
}

// mknodCalls are the calls that create device nodes, with the index of
// their mode argument.
var mknodCalls = []modeArg{
	{nr: unix.SYS_MKNOD, arg: 1},
	{nr: unix.SYS_MKNODAT, arg: 2},
}
