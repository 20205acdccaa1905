package confine

import "golang.org/x/sys/unix"

const (
	haveSeccompTable = true
	auditArch        = unix.AUDIT_ARCH_X86_64
	// x32SyscallBit (__X32_SYSCALL_BIT) marks the x32 ABI's syscalls, which
	// share AUDIT_ARCH_X86_64 with the native ones; the filter kills them.
	x32SyscallBit = 0x40000000
)

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
