package confine

import "golang.org/x/sys/unix"

const (
	haveSeccompTable = true
	auditArch        = unix.AUDIT_ARCH_AARCH64
	// x32SyscallBit is zero: arm64 has no second ABI sharing its audit arch
	// (32-bit arm tasks report AUDIT_ARCH_ARM and are killed by the arch
	// check).
	x32SyscallBit = 0
)

// archAllowed adds nothing on arm64: its table has only the generic calls.
var archAllowed []uint32

// archDenied adds nothing on arm64: it has no port I/O or legacy calls.
var archDenied []uint32

// mknodCalls are the calls that create device nodes, with the index of
// their mode argument; arm64 has only mknodat.
var mknodCalls = []modeArg{
	{nr: unix.SYS_MKNODAT, arg: 2},
}
