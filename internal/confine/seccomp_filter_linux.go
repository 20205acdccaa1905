//go:build amd64 || arm64

package confine

import "golang.org/x/sys/unix"

// Offsets into struct seccomp_data { int nr; __u32 arch; __u64
// instruction_pointer; __u64 args[6]; }. Both architectures with a table
// are little-endian, so an argument's low 32 bits come first.
const (
	offNr   = 0
	offArch = 4
)

func offArgLow(i uint32) uint32 { return 16 + 8*i }

// nsCloneFlags are the clone flags that create namespaces. clone(2) takes
// the exit signal in its low byte, so CLONE_NEWTIME (0x80) cannot reach
// the kernel through it; the bit stays in the mask all the same, which only
// refuses exit signals above 127 that the kernel would refuse too.
const nsCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS |
	unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// deniedSyscalls fail with EPERM whatever their arguments. They change the
// host rather than the process (mounts, modules, clocks, swap, reboot, host
// and domain names, accounting, quotas), reach into other processes
// (ptrace and its cousins), widen the kernel surface far beyond what a
// sandboxed program needs (bpf, keyrings, perf, userfaultfd, fanotify,
// file handles that bypass path checks), or escape seccomp altogether:
// io_uring performs I/O in kernel threads this filter never sees.
var deniedSyscalls = []uint32{
	// Mounts, namespaces, roots.
	unix.SYS_MOUNT,
	unix.SYS_UMOUNT2,
	unix.SYS_PIVOT_ROOT,
	unix.SYS_CHROOT,
	unix.SYS_UNSHARE,
	unix.SYS_SETNS,
	unix.SYS_FSOPEN,
	unix.SYS_FSMOUNT,
	unix.SYS_FSCONFIG,
	unix.SYS_FSPICK,
	unix.SYS_MOVE_MOUNT,
	unix.SYS_OPEN_TREE,
	unix.SYS_OPEN_TREE_ATTR,
	unix.SYS_MOUNT_SETATTR,
	// Other processes.
	unix.SYS_PTRACE,
	unix.SYS_PROCESS_VM_READV,
	unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KCMP,
	unix.SYS_PIDFD_GETFD,
	// Kernel surface.
	unix.SYS_BPF,
	unix.SYS_KEYCTL,
	unix.SYS_ADD_KEY,
	unix.SYS_REQUEST_KEY,
	unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_USERFAULTFD,
	unix.SYS_FANOTIFY_INIT,
	unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_IO_URING_SETUP,
	unix.SYS_IO_URING_ENTER,
	unix.SYS_IO_URING_REGISTER,
	// The machine.
	unix.SYS_KEXEC_LOAD,
	unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE,
	unix.SYS_FINIT_MODULE,
	unix.SYS_DELETE_MODULE,
	unix.SYS_REBOOT,
	unix.SYS_SWAPON,
	unix.SYS_SWAPOFF,
	unix.SYS_SYSLOG,
	unix.SYS_ACCT,
	unix.SYS_QUOTACTL,
	unix.SYS_QUOTACTL_FD,
	unix.SYS_SETTIMEOFDAY,
	unix.SYS_CLOCK_SETTIME,
	unix.SYS_CLOCK_ADJTIME,
	unix.SYS_ADJTIMEX,
	unix.SYS_SETHOSTNAME,
	unix.SYS_SETDOMAINNAME,
	unix.SYS_VHANGUP,
}

// modeArg is a call whose argument arg is a file mode (mknod, mknodat).
type modeArg struct {
	nr  uint32
	arg uint32
}

// buildFilter assembles the seccomp program. Everything not named here is
// allowed; the filter narrows a process, it does not enumerate what it may
// do.
//
//   - A foreign architecture (say i386 through int 0x80 on x86_64) or an x32
//     call kills the process: its numbers mean other calls.
//   - deniedSyscalls fail with EPERM.
//   - clone fails with EPERM when its flags create a namespace; clone3 fails
//     with ENOSYS, because its flags sit in memory BPF cannot read. glibc
//     then falls back to clone; Go forks with clone already and uses clone3
//     only for SysProcAttr.UseCgroupFD, which therefore fails.
//   - mknod and mknodat fail with EPERM for character and block devices:
//     Landlock lets a ReadWrite tree create them, and a device node made by
//     a sandbox holding CAP_MKNOD is a door to the host's disks and memory.
//   - ioctl TIOCSTI and TIOCLINUX fail with EPERM: they push input into a
//     terminal, which could be one outside the sandbox.
//   - With restrictSockets, socket allows AF_UNIX, and AF_INET/AF_INET6 only
//     for SOCK_STREAM with protocol 0 or IPPROTO_TCP (EPERM otherwise: no
//     UDP, raw, SCTP or MPTCP, which Landlock's TCP rules may not cover);
//     other families fail with EAFNOSUPPORT. socketpair allows AF_UNIX only.
func buildFilter(restrictSockets bool) ([]unix.SockFilter, error) {
	var a asm

	a.load(offArch)
	a.jeq(auditArch, "", "kill")
	a.load(offNr)
	if x32SyscallBit != 0 {
		a.jge(x32SyscallBit, "kill", "")
	}
	a.jeq(unix.SYS_CLONE, "clone", "")
	a.jeq(unix.SYS_CLONE3, "enosys", "")
	for _, m := range mknodCalls {
		a.jeq(m.nr, mknodLabel(m.arg), "")
	}
	a.jeq(unix.SYS_IOCTL, "ioctl", "")
	if restrictSockets {
		a.jeq(unix.SYS_SOCKET, "socket", "")
		a.jeq(unix.SYS_SOCKETPAIR, "socketpair", "")
	}
	for _, nr := range deniedSyscalls {
		a.jeq(nr, "eperm", "")
	}
	for _, nr := range archDenied {
		a.jeq(nr, "eperm", "")
	}
	a.jump("allow")

	// clone(flags, …) on both architectures; the kernel reads the low 32
	// bits of flags.
	a.label("clone")
	a.load(offArgLow(0))
	a.jset(nsCloneFlags, "eperm", "allow")

	seen := map[uint32]bool{}
	for _, m := range mknodCalls {
		if seen[m.arg] {
			continue
		}
		seen[m.arg] = true
		a.label(mknodLabel(m.arg))
		a.load(offArgLow(m.arg))
		a.and(unix.S_IFMT)
		a.jeq(unix.S_IFCHR, "eperm", "")
		a.jeq(unix.S_IFBLK, "eperm", "allow")
	}

	// ioctl(fd, cmd, …): cmd is an unsigned int.
	a.label("ioctl")
	a.load(offArgLow(1))
	a.jeq(unix.TIOCSTI, "eperm", "")
	a.jeq(unix.TIOCLINUX, "eperm", "allow")

	if restrictSockets {
		// socket(domain, type, protocol), all ints.
		a.label("socket")
		a.load(offArgLow(0))
		a.jeq(unix.AF_UNIX, "allow", "")
		a.jeq(unix.AF_INET, "inet", "")
		a.jeq(unix.AF_INET6, "inet", "eafnosupport")
		a.label("inet")
		a.load(offArgLow(1))
		a.and(0xf) // SOCK_TYPE_MASK: drops SOCK_NONBLOCK and SOCK_CLOEXEC
		a.jeq(unix.SOCK_STREAM, "", "eperm")
		a.load(offArgLow(2))
		a.jeq(0, "allow", "")
		a.jeq(unix.IPPROTO_TCP, "allow", "eperm")

		a.label("socketpair")
		a.load(offArgLow(0))
		a.jeq(unix.AF_UNIX, "allow", "eafnosupport")

		a.label("eafnosupport")
		a.retErrno(unix.EAFNOSUPPORT)
	}

	// The verdicts come last: classic BPF jumps forward only.
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("eperm")
	a.retErrno(unix.EPERM)
	a.label("enosys")
	a.retErrno(unix.ENOSYS)
	a.label("kill")
	a.ret(unix.SECCOMP_RET_KILL_PROCESS)

	return a.assemble()
}

func mknodLabel(arg uint32) string {
	return "mknod_mode_arg" + string(rune('0'+arg))
}
