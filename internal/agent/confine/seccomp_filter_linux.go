//go:build amd64 || arm64

package confine

import (
	"fmt"
	"maps"
	"slices"

	"golang.org/x/sys/unix"
)

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

// deniedSyscalls fail with EPERM whatever their arguments, as they do in
// Docker's default profile (which refuses them unless the container holds
// the capability they need) and as the kernel itself answers a caller
// without that capability: a program that tries one is told it may not,
// not that the kernel lacks it. They change the host rather than the
// process (mounts, modules, clocks, swap, reboot, host
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
	unix.SYS_PROCESS_MADVISE,
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

// allowedSyscalls are the calls, common to both architectures, that the
// filter lets through whatever their arguments; archAllowed adds each
// architecture's own. A call on neither list, nor deniedSyscalls, nor
// among the few whose arguments buildFilter checks, fails with ENOSYS.
//
// The list is Docker's default profile (moby profiles/seccomp), under which
// shells, coreutils, compilers, interpreters and package managers have run
// for years, less what deniedSyscalls refuses and less calls that only a
// capability Docker would not grant makes useful (fanotify_mark without
// fanotify_init; the NUMA policy calls, refused as by a kernel without
// NUMA), plus the calls since that are new forms of listed ones (fchmodat2,
// the futex2 calls, the *xattrat family, mseal, map_shadow_stack). Newer
// calls are left out until a program needs one.
var allowedSyscalls = []uint32{
	// Files and directories. Landlock and the file's mode decide what a
	// path may be used for; seccomp only keeps the kinds of call in bounds.
	unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_CLOSE, unix.SYS_CLOSE_RANGE,
	unix.SYS_READ, unix.SYS_WRITE, unix.SYS_READV, unix.SYS_WRITEV,
	unix.SYS_PREAD64, unix.SYS_PWRITE64, unix.SYS_PREADV, unix.SYS_PWRITEV,
	unix.SYS_PREADV2, unix.SYS_PWRITEV2, unix.SYS_LSEEK,
	unix.SYS_DUP, unix.SYS_DUP3, unix.SYS_FCNTL, unix.SYS_FLOCK,
	unix.SYS_FSTAT, unix.SYS_NEWFSTATAT, unix.SYS_STATX, unix.SYS_STATFS, unix.SYS_FSTATFS,
	unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2, unix.SYS_GETDENTS64,
	unix.SYS_GETCWD, unix.SYS_CHDIR, unix.SYS_FCHDIR,
	unix.SYS_MKDIRAT, unix.SYS_UNLINKAT, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
	unix.SYS_LINKAT, unix.SYS_SYMLINKAT, unix.SYS_READLINKAT,
	unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_UMASK,
	unix.SYS_FCHOWN, unix.SYS_FCHOWNAT, // root inside the namespace driver holds CAP_CHOWN
	unix.SYS_TRUNCATE, unix.SYS_FTRUNCATE, unix.SYS_FALLOCATE,
	unix.SYS_FADVISE64, unix.SYS_READAHEAD,
	unix.SYS_FSYNC, unix.SYS_FDATASYNC, unix.SYS_SYNC, unix.SYS_SYNCFS, unix.SYS_SYNC_FILE_RANGE,
	unix.SYS_UTIMENSAT,
	unix.SYS_COPY_FILE_RANGE, unix.SYS_SENDFILE, unix.SYS_SPLICE, unix.SYS_TEE, unix.SYS_VMSPLICE,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_GETXATTR, unix.SYS_LGETXATTR, unix.SYS_FGETXATTR, unix.SYS_GETXATTRAT,
	unix.SYS_LISTXATTR, unix.SYS_LLISTXATTR, unix.SYS_FLISTXATTR, unix.SYS_LISTXATTRAT,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_REMOVEXATTRAT,
	// Waiting on descriptors, and descriptors to wait on. (io_uring is
	// denied; libuv and others fall back to these.)
	unix.SYS_PIPE2, unix.SYS_PPOLL, unix.SYS_PSELECT6,
	unix.SYS_EPOLL_CREATE1, unix.SYS_EPOLL_CTL, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2,
	unix.SYS_EVENTFD2, unix.SYS_SIGNALFD4,
	unix.SYS_TIMERFD_CREATE, unix.SYS_TIMERFD_SETTIME, unix.SYS_TIMERFD_GETTIME,
	unix.SYS_INOTIFY_INIT1, unix.SYS_INOTIFY_ADD_WATCH, unix.SYS_INOTIFY_RM_WATCH,
	unix.SYS_IO_SETUP, unix.SYS_IO_DESTROY, unix.SYS_IO_SUBMIT, unix.SYS_IO_CANCEL,
	unix.SYS_IO_GETEVENTS, unix.SYS_IO_PGETEVENTS, // Linux AIO: runs in the caller's context, unlike io_uring
	// Memory of the process itself.
	unix.SYS_BRK, unix.SYS_MMAP, unix.SYS_MUNMAP, unix.SYS_MREMAP, unix.SYS_MPROTECT,
	unix.SYS_MADVISE, unix.SYS_MSYNC, unix.SYS_MINCORE, unix.SYS_REMAP_FILE_PAGES,
	unix.SYS_MLOCK, unix.SYS_MLOCK2, unix.SYS_MLOCKALL, unix.SYS_MUNLOCK, unix.SYS_MUNLOCKALL,
	unix.SYS_MEMBARRIER, unix.SYS_MEMFD_CREATE, unix.SYS_MEMFD_SECRET,
	unix.SYS_PKEY_ALLOC, unix.SYS_PKEY_FREE, unix.SYS_PKEY_MPROTECT,
	unix.SYS_MSEAL, unix.SYS_MAP_SHADOW_STACK,
	// Processes and threads (clone is checked below, clone3 refused).
	unix.SYS_EXECVE, unix.SYS_EXECVEAT, unix.SYS_EXIT, unix.SYS_EXIT_GROUP,
	unix.SYS_WAIT4, unix.SYS_WAITID,
	unix.SYS_SET_TID_ADDRESS, unix.SYS_SET_ROBUST_LIST, unix.SYS_GET_ROBUST_LIST, unix.SYS_RSEQ,
	unix.SYS_FUTEX, unix.SYS_FUTEX_WAITV, unix.SYS_FUTEX_WAKE, unix.SYS_FUTEX_WAIT, unix.SYS_FUTEX_REQUEUE,
	unix.SYS_GETPID, unix.SYS_GETPPID, unix.SYS_GETTID,
	unix.SYS_GETPGID, unix.SYS_SETPGID, unix.SYS_GETSID, unix.SYS_SETSID,
	unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, // Landlock scopes signals to the sandbox
	unix.SYS_PIDFD_OPEN, unix.SYS_PIDFD_SEND_SIGNAL, unix.SYS_PROCESS_MRELEASE,
	unix.SYS_PRCTL, unix.SYS_PRLIMIT64, unix.SYS_GETRLIMIT, unix.SYS_SETRLIMIT, unix.SYS_GETRUSAGE,
	unix.SYS_GETPRIORITY, unix.SYS_SETPRIORITY, unix.SYS_IOPRIO_GET, unix.SYS_IOPRIO_SET,
	unix.SYS_SCHED_YIELD, unix.SYS_SCHED_GETAFFINITY, unix.SYS_SCHED_SETAFFINITY,
	unix.SYS_SCHED_GETATTR, unix.SYS_SCHED_SETATTR, unix.SYS_SCHED_GETPARAM, unix.SYS_SCHED_SETPARAM,
	unix.SYS_SCHED_GETSCHEDULER, unix.SYS_SCHED_SETSCHEDULER,
	unix.SYS_SCHED_GET_PRIORITY_MAX, unix.SYS_SCHED_GET_PRIORITY_MIN, unix.SYS_SCHED_RR_GET_INTERVAL,
	unix.SYS_GETCPU, unix.SYS_UNAME, unix.SYS_SYSINFO, unix.SYS_TIMES, unix.SYS_GETRANDOM,
	unix.SYS_RESTART_SYSCALL,
	// A process may only narrow itself further.
	unix.SYS_SECCOMP, unix.SYS_LANDLOCK_CREATE_RULESET, unix.SYS_LANDLOCK_ADD_RULE,
	unix.SYS_LANDLOCK_RESTRICT_SELF,
	// Signals.
	unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_RT_SIGPENDING,
	unix.SYS_RT_SIGSUSPEND, unix.SYS_RT_SIGTIMEDWAIT, unix.SYS_RT_SIGQUEUEINFO,
	unix.SYS_RT_TGSIGQUEUEINFO, unix.SYS_SIGALTSTACK,
	// Time, read only.
	unix.SYS_CLOCK_GETTIME, unix.SYS_CLOCK_GETRES, unix.SYS_CLOCK_NANOSLEEP, unix.SYS_NANOSLEEP,
	unix.SYS_GETTIMEOFDAY, unix.SYS_GETITIMER, unix.SYS_SETITIMER,
	unix.SYS_TIMER_CREATE, unix.SYS_TIMER_SETTIME, unix.SYS_TIMER_GETTIME,
	unix.SYS_TIMER_GETOVERRUN, unix.SYS_TIMER_DELETE,
	// Identity. The kernel lets a process change its ids only with
	// CAP_SETUID/CAP_SETGID, which only root inside the namespace driver
	// holds, over the ids mapped to the sandbox (su, apt's _apt user).
	unix.SYS_GETUID, unix.SYS_GETEUID, unix.SYS_GETGID, unix.SYS_GETEGID,
	unix.SYS_GETRESUID, unix.SYS_GETRESGID, unix.SYS_GETGROUPS,
	unix.SYS_SETUID, unix.SYS_SETGID, unix.SYS_SETREUID, unix.SYS_SETREGID,
	unix.SYS_SETRESUID, unix.SYS_SETRESGID, unix.SYS_SETGROUPS,
	unix.SYS_SETFSUID, unix.SYS_SETFSGID, unix.SYS_CAPGET, unix.SYS_CAPSET,
	// Sockets (socket and socketpair are checked below).
	unix.SYS_BIND, unix.SYS_LISTEN, unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_CONNECT,
	unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME, unix.SYS_GETSOCKOPT, unix.SYS_SETSOCKOPT,
	unix.SYS_SENDTO, unix.SYS_RECVFROM, unix.SYS_SENDMSG, unix.SYS_RECVMSG,
	unix.SYS_SENDMMSG, unix.SYS_RECVMMSG, unix.SYS_SHUTDOWN,
	// System V and POSIX IPC (the namespace driver's sandboxes have an IPC
	// namespace each; the process driver's share the host's, as before).
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMDT, unix.SYS_SHMCTL,
	unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
	unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
	unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE,
	unix.SYS_MQ_NOTIFY, unix.SYS_MQ_GETSETATTR,
}

// allowedPersonalities are the personality(2) values the filter lets
// through, Docker's: PER_LINUX, PER_LINUX32 (linux32, 32-bit builds),
// either with UNAME26, and 0xffffffff, which only reads the current one.
// Every other value fails with EPERM: ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC
// and the like switch off protections the kernel gives every process (and
// its children).
var allowedPersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffff_ffff}

// modeArg is a call whose argument arg is a file mode (mknod, mknodat).
type modeArg struct {
	nr  uint32
	arg uint32
}

// buildFilter assembles the seccomp program, an allowlist.
//
//   - A foreign architecture (say i386 through int 0x80 on x86_64) or an x32
//     call kills the process: its numbers mean other calls.
//   - allowedSyscalls and archAllowed pass.
//   - deniedSyscalls and archDenied fail with EPERM.
//   - Every other number fails with ENOSYS: calls hutch does not list, those
//     a later kernel adds, numbers never assigned. ENOSYS is what an older
//     kernel answers, so programs take the fallback they already have for
//     one (glibc's faccessat2 and clone3, libmount's statmount); an EPERM
//     there breaks them, which is why runc answers ENOSYS for calls newer
//     than its profile. The kernel answers ENOSYS for unassigned numbers
//     too.
//   - clone fails with EPERM when its flags create a namespace; clone3 fails
//     with ENOSYS, because its flags sit in memory BPF cannot read. glibc
//     then falls back to clone; Go forks with clone already and uses clone3
//     only for SysProcAttr.UseCgroupFD, which therefore fails.
//   - mknod and mknodat fail with EPERM for character and block devices:
//     Landlock lets a ReadWrite tree create them, and a device node made by
//     a sandbox holding CAP_MKNOD is a door to the host's disks and memory.
//   - ioctl TIOCSTI and TIOCLINUX fail with EPERM: they push input into a
//     terminal, which could be one outside the sandbox.
//   - personality passes only allowedPersonalities (EPERM otherwise).
//   - socket fails with EAFNOSUPPORT for AF_VSOCK, which no network
//     namespace encloses: it reaches the host or its hypervisor.
//   - With restrictSockets, socket allows AF_UNIX, and AF_INET/AF_INET6 only
//     for SOCK_STREAM with protocol 0 or IPPROTO_TCP (EPERM otherwise: no
//     UDP, raw, SCTP or MPTCP, which Landlock's TCP rules may not cover);
//     other families fail with EAFNOSUPPORT. socketpair allows AF_UNIX only.
//
// The number is looked up by a binary search over runs of numbers with one
// verdict (asm.dispatch), a dozen comparisons for any call.
func buildFilter(restrictSockets bool) ([]unix.SockFilter, error) {
	verdicts, err := syscallVerdicts(restrictSockets)
	if err != nil {
		return nil, err
	}
	var a asm

	// The kills come first, before the table puts them out of a
	// conditional jump's reach.
	a.load(offArch)
	a.jeq(auditArch, "native", "")
	a.ret(unix.SECCOMP_RET_KILL_PROCESS)
	a.label("native")
	a.load(offNr)
	if x32SyscallBit != 0 {
		a.jge(x32SyscallBit, "", "table")
		a.ret(unix.SECCOMP_RET_KILL_PROCESS)
		a.label("table")
	}
	a.dispatch(spansOf(verdicts))

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

	// personality(persona): an unsigned int.
	a.label("personality")
	a.load(offArgLow(0))
	for _, p := range allowedPersonalities {
		a.jeq(p, "allow", "")
	}
	a.jump("eperm")

	// socket(domain, type, protocol), all ints.
	a.label("socket")
	a.load(offArgLow(0))
	if restrictSockets {
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
	} else {
		a.jeq(unix.AF_VSOCK, "eafnosupport", "allow")
	}

	// The verdicts come last: classic BPF jumps forward only.
	a.label("eafnosupport")
	a.retErrno(unix.EAFNOSUPPORT)
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("eperm")
	a.retErrno(unix.EPERM)
	a.label("enosys")
	a.retErrno(unix.ENOSYS)

	return a.assemble()
}

// syscallVerdicts maps every system call the filter names to the label it
// goes to: a verdict or the check of its arguments. A number named twice is
// an error, so no list can shadow another.
func syscallVerdicts(restrictSockets bool) (map[uint32]string, error) {
	v := map[uint32]string{}
	var err error
	set := func(to string, nrs ...uint32) {
		for _, nr := range nrs {
			if prev, dup := v[nr]; dup && err == nil {
				err = fmt.Errorf("confine: seccomp filter names syscall %d twice (%s, %s)", nr, prev, to)
			}
			v[nr] = to
		}
	}
	set("allow", allowedSyscalls...)
	set("allow", archAllowed...)
	set("eperm", deniedSyscalls...)
	set("eperm", archDenied...)
	set("clone", unix.SYS_CLONE)
	set("enosys", unix.SYS_CLONE3)
	for _, m := range mknodCalls {
		set(mknodLabel(m.arg), m.nr)
	}
	set("ioctl", unix.SYS_IOCTL)
	set("personality", unix.SYS_PERSONALITY)
	set("socket", unix.SYS_SOCKET)
	if restrictSockets {
		set("socketpair", unix.SYS_SOCKETPAIR)
	} else {
		set("allow", unix.SYS_SOCKETPAIR)
	}
	return v, err
}

// spansOf turns verdicts into the runs of numbers dispatch searches, every
// number the map does not name going to "enosys".
func spansOf(verdicts map[uint32]string) []span {
	var out []span
	add := func(lo uint32, to string) {
		if len(out) > 0 && out[len(out)-1].to == to {
			return
		}
		out = append(out, span{lo: lo, to: to})
	}
	next := uint32(0)
	for _, nr := range slices.Sorted(maps.Keys(verdicts)) {
		if nr > next {
			add(next, "enosys")
		}
		add(nr, verdicts[nr])
		next = nr + 1
	}
	add(next, "enosys")
	return out
}

func mknodLabel(arg uint32) string {
	return "mknod_mode_arg" + string(rune('0'+arg))
}
