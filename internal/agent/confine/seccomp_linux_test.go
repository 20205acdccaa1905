package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	scenarios["seccomp"] = childSeccomp
	scenarios["sockets"] = childSockets
}

// TestSeccomp: the filter refuses namespaces, mounts, ptrace, keyrings,
// bpf, io_uring and device nodes with EPERM, and clone3 and every call it
// does not list with ENOSYS, while ordinary calls and fork/exec work, and
// a grandchild inherits no_new_privs and the filter.
func TestSeccomp(t *testing.T) {
	needSeccomp(t)
	cfg := Config{NoNewPrivs: true, Seccomp: true}
	rep := runChild(t, "seccomp", childArgs{Config: cfg, Dir: t.TempDir()})
	if !rep.Seccomp {
		t.Errorf("Report.Seccomp = false, want true")
	}
	if hasMissing(rep, MissingSeccomp) {
		t.Errorf("Report.Missing = %v holds %q", rep.Missing, MissingSeccomp)
	}
}

func rawErrno(_, _ uintptr, errno unix.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// lsmListModules makes lsm_list_modules(2) with room for every module.
func lsmListModules() error {
	var ids [64]uint64
	size := uint32(len(ids) * 8)
	return rawErrno(unix.Syscall(unix.SYS_LSM_LIST_MODULES, uintptr(unsafe.Pointer(&ids[0])), uintptr(unsafe.Pointer(&size)), 0))
}

func childSeccomp(a *childArgs) error {
	var c checks
	// Controls: the same calls reach the kernel before Apply. Each is made
	// so it fails or does nothing there, should the filter ever let it
	// through.
	c.errno("control: ioctl(-1, TIOCSTI) before Apply", rawErrno(unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), unix.TIOCSTI, 0)), unix.EBADF)
	c.errno("control: mount of an unknown fs type before Apply",
		unix.Mount("none", a.Dir, "hutch-no-such-fs", 0, ""), unix.ENODEV)
	// lsm_list_modules is a real call every user may make, which the
	// allowlist leaves out (ENOSYS before Apply: a kernel without it).
	lsmErr := lsmListModules()
	if !errors.Is(lsmErr, unix.ENOSYS) {
		c.ok("control: lsm_list_modules before Apply", lsmErr)
	}
	c.ok("control: personality(query) before Apply", rawErrno(unix.Syscall(unix.SYS_PERSONALITY, 0xffff_ffff, 0, 0)))

	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}

	c.errno("unshare(CLONE_NEWUSER)", unix.Unshare(unix.CLONE_NEWUSER), unix.EPERM)
	c.errno("unshare(CLONE_NEWNS)", unix.Unshare(unix.CLONE_NEWNS), unix.EPERM)
	c.errno("mount", unix.Mount("none", a.Dir, "hutch-no-such-fs", 0, ""), unix.EPERM)
	c.errno("umount2", unix.Unmount(a.Dir, 0), unix.EPERM)
	c.errno("ptrace(PTRACE_TRACEME)", rawErrno(unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)), unix.EPERM)
	c.errno("ptrace(PTRACE_SEIZE, parent)", rawErrno(unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(os.Getppid()), 0, 0, 0, 0)), unix.EPERM)
	_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
	c.errno("keyctl", err, unix.EPERM)
	c.errno("bpf(BPF_MAP_CREATE)", rawErrno(unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, 0, 0)), unix.EPERM)
	c.errno("io_uring_setup", rawErrno(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)), unix.EPERM)
	c.errno("perf_event_open", rawErrno(unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0)), unix.EPERM)
	if host, err := os.Hostname(); err == nil {
		c.errno("sethostname", unix.Sethostname([]byte(host)), unix.EPERM)
	}
	c.errno("ioctl(-1, TIOCSTI)", rawErrno(unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), unix.TIOCSTI, 0)), unix.EPERM)
	c.errno("ioctl(-1, TCGETS) reaches the kernel", rawErrno(unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), unix.TCGETS, 0)), unix.EBADF)
	c.errno("mknod of a character device", unix.Mknod(filepath.Join(a.Dir, "null"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))), unix.EPERM)
	c.ok("mknod of a fifo", unix.Mknod(filepath.Join(a.Dir, "fifo"), unix.S_IFIFO|0o600, 0))

	// An allowlist: a call it does not name, real or never assigned, is
	// refused with ENOSYS, as if this kernel were older.
	c.errno("lsm_list_modules (not listed)", lsmListModules(), unix.ENOSYS)
	c.errno("syscall 1000 (never assigned)", rawErrno(unix.Syscall(1000, 0, 0, 0)), unix.ENOSYS)
	// personality may not switch address randomisation off.
	c.errno("personality(ADDR_NO_RANDOMIZE)", rawErrno(unix.Syscall(unix.SYS_PERSONALITY, 0x0040000 /* ADDR_NO_RANDOMIZE */, 0, 0)), unix.EPERM)
	c.ok("personality(query)", rawErrno(unix.Syscall(unix.SYS_PERSONALITY, 0xffff_ffff, 0, 0)))

	// clone with a namespace flag, the way Go's os/exec makes it.
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	c.errno("clone(CLONE_NEWNS)", cmd.Run(), unix.EPERM)
	// Go uses clone3 for UseCgroupFD; the filter answers ENOSYS.
	dirFD, err := unix.Open(a.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	c.ok("open dir", err)
	if err == nil {
		cmd = exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: dirFD}
		c.errno("clone3", cmd.Run(), unix.ENOSYS)
		unix.Close(dirFD)
	}

	// Ordinary life goes on.
	c.that("getpid", unix.Getpid() == os.Getpid())
	p := filepath.Join(a.Dir, "file")
	c.ok("write a file", os.WriteFile(p, []byte("data"), 0o644))
	b, err := os.ReadFile(p)
	c.ok("read it back", err)
	c.that("read back what was written", string(b) == "data")
	c.ok("/bin/sh -c true", exec.Command("/bin/sh", "-c", "true").Run())
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	c.ok("prctl(PR_GET_DUMPABLE)", err)
	c.that(fmt.Sprintf("dumpable = %d, want 0", dumpable), dumpable == 0)

	// A grandchild inherits no_new_privs and the filter.
	out, err := exec.Command("/bin/cat", "/proc/self/status").Output()
	c.ok("cat /proc/self/status", err)
	st := procStatus(string(out))
	c.that(fmt.Sprintf("grandchild NoNewPrivs = %q, want 1", st["NoNewPrivs"]), st["NoNewPrivs"] == "1")
	c.that(fmt.Sprintf("grandchild Seccomp = %q, want 2 (filter)", st["Seccomp"]), st["Seccomp"] == "2")
	return c.err()
}

// TestRestrictSockets: only unix sockets and TCP over IPv4/IPv6.
func TestRestrictSockets(t *testing.T) {
	needSeccomp(t)
	cfg := Config{NoNewPrivs: true, Seccomp: true, RestrictSockets: true}
	rep := runChild(t, "sockets", childArgs{Config: cfg})
	if !rep.Seccomp {
		t.Errorf("Report.Seccomp = false, want true")
	}
}

func childSockets(a *childArgs) error {
	type sock struct {
		name                 string
		domain, typ, proto   int
		want                 unix.Errno // 0: allowed
		pair, controlAllowed bool
	}
	cases := []sock{
		{name: "netlink", domain: unix.AF_NETLINK, typ: unix.SOCK_RAW, proto: unix.NETLINK_ROUTE, want: unix.EAFNOSUPPORT, controlAllowed: true},
		{name: "packet", domain: unix.AF_PACKET, typ: unix.SOCK_RAW, want: unix.EAFNOSUPPORT},
		{name: "udp4", domain: unix.AF_INET, typ: unix.SOCK_DGRAM, want: unix.EPERM, controlAllowed: true},
		{name: "udp6", domain: unix.AF_INET6, typ: unix.SOCK_DGRAM, want: unix.EPERM},
		{name: "raw icmp", domain: unix.AF_INET, typ: unix.SOCK_RAW, proto: unix.IPPROTO_ICMP, want: unix.EPERM},
		{name: "mptcp", domain: unix.AF_INET, typ: unix.SOCK_STREAM, proto: unix.IPPROTO_MPTCP, want: unix.EPERM},
		{name: "unix stream", domain: unix.AF_UNIX, typ: unix.SOCK_STREAM},
		{name: "unix dgram", domain: unix.AF_UNIX, typ: unix.SOCK_DGRAM},
		{name: "tcp4", domain: unix.AF_INET, typ: unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK},
		{name: "tcp6", domain: unix.AF_INET6, typ: unix.SOCK_STREAM, proto: unix.IPPROTO_TCP},
		{name: "socketpair unix", domain: unix.AF_UNIX, typ: unix.SOCK_STREAM, pair: true},
		{name: "socketpair inet", domain: unix.AF_INET, typ: unix.SOCK_STREAM, pair: true, want: unix.EAFNOSUPPORT},
	}
	try := func(s sock) error {
		if s.pair {
			fds, err := unix.Socketpair(s.domain, s.typ|unix.SOCK_CLOEXEC, s.proto)
			if err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			return err
		}
		fd, err := unix.Socket(s.domain, s.typ|unix.SOCK_CLOEXEC, s.proto)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	var c checks
	for _, s := range cases {
		if s.controlAllowed {
			c.ok("control: "+s.name+" before Apply", try(s))
		}
	}
	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}
	for _, s := range cases {
		if s.want == 0 {
			c.ok(s.name, try(s))
		} else {
			c.errno(s.name, try(s), s.want)
		}
	}
	return c.err()
}
