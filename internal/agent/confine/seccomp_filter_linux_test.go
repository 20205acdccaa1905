//go:build amd64 || arm64

package confine

import (
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	retAllow        = unix.SECCOMP_RET_ALLOW
	retKill         = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM        = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS       = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retEAFNOSUPPORT = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
)

func call(nr uint32, args ...uint64) seccompData {
	d := seccompData{nr: nr, arch: auditArch}
	copy(d.args[:], args)
	return d
}

// TestFilterPolicy runs the real filter in an interpreter against calls the
// kernel could hand it, including ones no test process should make for real
// (a foreign architecture, x32, reboot).
func TestFilterPolicy(t *testing.T) {
	const highBits = 0xdead_beef_0000_0000 // garbage the kernel ignores in int arguments
	type tc struct {
		name string
		data seccompData
		want uint32
	}
	common := []tc{
		{"getpid", call(unix.SYS_GETPID), retAllow},
		{"openat", call(unix.SYS_OPENAT), retAllow},
		{"foreign arch", seccompData{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_I386}, retKill},
		{"arm on arm64 or i386 on x86_64", seccompData{nr: 1, arch: unix.AUDIT_ARCH_ARM}, retKill},
		{"thread clone", call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM), retAllow},
		{"vfork clone with pidfd", call(unix.SYS_CLONE, unix.CLONE_VFORK|unix.CLONE_VM|unix.CLONE_PIDFD|uint64(unix.SIGCHLD)), retAllow},
		{"clone newuser", call(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM},
		{"clone newns", call(unix.SYS_CLONE, unix.CLONE_NEWNS), retEPERM},
		{"clone newnet", call(unix.SYS_CLONE, unix.CLONE_NEWNET), retEPERM},
		{"clone newpid", call(unix.SYS_CLONE, unix.CLONE_NEWPID), retEPERM},
		{"clone newcgroup", call(unix.SYS_CLONE, unix.CLONE_NEWCGROUP), retEPERM},
		{"clone3", call(unix.SYS_CLONE3), retENOSYS},
		{"unshare", call(unix.SYS_UNSHARE, unix.CLONE_FILES), retEPERM},
		{"setns", call(unix.SYS_SETNS), retEPERM},
		{"mount", call(unix.SYS_MOUNT), retEPERM},
		{"ptrace", call(unix.SYS_PTRACE), retEPERM},
		{"bpf", call(unix.SYS_BPF), retEPERM},
		{"reboot", call(unix.SYS_REBOOT), retEPERM},
		{"io_uring_setup", call(unix.SYS_IO_URING_SETUP), retEPERM},
		{"io_uring_enter", call(unix.SYS_IO_URING_ENTER), retEPERM},
		{"mknodat fifo", call(unix.SYS_MKNODAT, 0, 0, unix.S_IFIFO|0o600), retAllow},
		{"mknodat regular", call(unix.SYS_MKNODAT, 0, 0, unix.S_IFREG|0o600), retAllow},
		{"mknodat char device", call(unix.SYS_MKNODAT, 0, 0, unix.S_IFCHR|0o600), retEPERM},
		{"mknodat block device", call(unix.SYS_MKNODAT, 0, 0, highBits|unix.S_IFBLK|0o600), retEPERM},
		{"ioctl TCGETS", call(unix.SYS_IOCTL, 0, unix.TCGETS), retAllow},
		{"ioctl TIOCSTI", call(unix.SYS_IOCTL, 0, unix.TIOCSTI), retEPERM},
		{"ioctl TIOCLINUX", call(unix.SYS_IOCTL, 0, highBits|unix.TIOCLINUX), retEPERM},
		// An allowlist: what is not listed does not reach the kernel.
		{"unassigned number", call(1000), retENOSYS},
		{"highest number below x32", call(0x3fff_ffff), retENOSYS},
		{"lsm_list_modules, real but not listed", call(unix.SYS_LSM_LIST_MODULES), retENOSYS},
		{"listmount, real but not listed", call(unix.SYS_LISTMOUNT), retENOSYS},
		{"personality query", call(unix.SYS_PERSONALITY, 0xffff_ffff), retAllow},
		{"personality PER_LINUX", call(unix.SYS_PERSONALITY, highBits), retAllow},
		{"personality PER_LINUX32", call(unix.SYS_PERSONALITY, 0x8), retAllow},
		{"personality ADDR_NO_RANDOMIZE", call(unix.SYS_PERSONALITY, 0x0040000), retEPERM},
		{"personality READ_IMPLIES_EXEC", call(unix.SYS_PERSONALITY, 0x0400000), retEPERM},
	}
	sockets := []tc{
		{"socket unix", call(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_DGRAM), retAllow},
		{"socket tcp4", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK), retAllow},
		{"socket tcp6 explicit", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP), retAllow},
		{"socket tcp4 garbage high bits", call(unix.SYS_SOCKET, highBits|unix.AF_INET, highBits|unix.SOCK_STREAM, highBits), retAllow},
		{"socket udp4", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM), retEPERM},
		{"socket udp6", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), retEPERM},
		{"socket raw4", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), retEPERM},
		{"socket sctp stream", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP), retEPERM},
		{"socket mptcp", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retEPERM},
		{"socket netlink", call(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW), retEAFNOSUPPORT},
		{"socket packet", call(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), retEAFNOSUPPORT},
		{"socket vsock", call(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), retEAFNOSUPPORT},
		{"socketpair unix", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socketpair inet", call(unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM), retEAFNOSUPPORT},
	}
	unrestricted := []tc{
		{"socket netlink unrestricted", call(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW), retAllow},
		{"socket udp4 unrestricted", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM), retAllow},
		{"socketpair inet unrestricted", call(unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM), retAllow},
		{"socket vsock unrestricted", call(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), retEAFNOSUPPORT},
	}
	for _, restrict := range []bool{false, true} {
		prog, err := buildFilter(restrict)
		if err != nil {
			t.Fatalf("buildFilter(%v): %v", restrict, err)
		}
		cases := slices.Concat(common, unrestricted)
		if restrict {
			cases = slices.Concat(common, sockets)
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("restrict=%v/%s", restrict, c.name), func(t *testing.T) {
				got, err := runBPF(prog, c.data.bytes())
				if err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("filter returned %#x, want %#x", got, c.want)
				}
			})
		}
	}
}

// TestFilterDeniesEveryListedCall checks each deny entry is reachable, not
// shadowed by an earlier branch.
func TestFilterDeniesEveryListedCall(t *testing.T) {
	prog, err := buildFilter(true)
	if err != nil {
		t.Fatal(err)
	}
	for _, nr := range slices.Concat(deniedSyscalls, archDenied) {
		got, err := runBPF(prog, call(nr).bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got != retEPERM {
			t.Errorf("syscall %d: filter returned %#x, want EPERM", nr, got)
		}
	}
}

func TestFilterKillsX32(t *testing.T) {
	if x32SyscallBit == 0 {
		t.Skip("this architecture has no x32-like second ABI")
	}
	prog, err := buildFilter(false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runBPF(prog, call(x32SyscallBit|unix.SYS_GETPID).bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got != retKill {
		t.Errorf("x32 getpid: filter returned %#x, want kill", got)
	}
}

// TestFilterAllowsEveryListedCall checks each allow entry is reachable.
func TestFilterAllowsEveryListedCall(t *testing.T) {
	for _, restrict := range []bool{false, true} {
		prog, err := buildFilter(restrict)
		if err != nil {
			t.Fatal(err)
		}
		for _, nr := range slices.Concat(allowedSyscalls, archAllowed) {
			got, err := runBPF(prog, call(nr).bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got != retAllow {
				t.Errorf("restrict=%v: syscall %d: filter returned %#x, want allow", restrict, nr, got)
			}
		}
	}
}

// TestFilterIsAnAllowlist: every number the filter does not name, real
// calls of today's kernels and numbers no kernel has assigned yet, fails
// with ENOSYS.
func TestFilterIsAnAllowlist(t *testing.T) {
	for _, restrict := range []bool{false, true} {
		prog, err := buildFilter(restrict)
		if err != nil {
			t.Fatal(err)
		}
		named, err := syscallVerdicts(restrict)
		if err != nil {
			t.Fatal(err)
		}
		unnamed := 0
		for _, nr := range slices.Concat(seq(0, 4096), []uint32{1 << 20, 0x3fff_ffff}) {
			if _, ok := named[nr]; ok {
				continue
			}
			unnamed++
			got, err := runBPF(prog, call(nr).bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got != retENOSYS {
				t.Errorf("restrict=%v: unnamed syscall %d: filter returned %#x, want ENOSYS", restrict, nr, got)
			}
		}
		if unnamed < 4096-len(named) {
			t.Errorf("restrict=%v: only %d numbers unnamed", restrict, unnamed)
		}
	}
}

func seq(from, to uint32) []uint32 {
	var s []uint32
	for n := from; n < to; n++ {
		s = append(s, n)
	}
	return s
}
