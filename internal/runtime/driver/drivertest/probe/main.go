// Command probe runs inside a sandbox during the driver conformance
// suite's escape tests and tries, at the system-call level, what a
// sandbox must never be able to do. It prints one JSON object mapping
// each attempt to "ok" (it worked: an escape) or the error it met.
//
//	probe syscalls       every attempt below
//	probe alloc N        allocate and touch N MiB, then print "allocated"
//	probe inotify N      open up to N inotify instances, print how many
//	                     opened, and hold them until killed
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe syscalls | alloc N")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "syscalls":
		b, _ := json.Marshal(attempts())
		fmt.Println(string(b))
	case "inotify":
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			os.Exit(2)
		}
		// The runtime's poller (its epoll descriptor) is made before the
		// instances can use up the process's descriptors: made later,
		// its failure is fatal (where the descriptor limit, not the
		// host's inotify budget, is what runs out first: a Pod's).
		time.Sleep(time.Millisecond)
		opened := 0
		for ; opened < n; opened++ {
			if _, err := unix.InotifyInit1(0); err != nil {
				break
			}
		}
		fmt.Println(opened)
		time.Sleep(time.Hour)
	case "alloc":
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			os.Exit(2)
		}
		alloc(n)
		fmt.Println("allocated")
	default:
		os.Exit(2)
	}
}

// alloc allocates n MiB and writes every page, so it is really charged.
func alloc(n int) {
	var keep [][]byte
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	_ = keep
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func errnoOf(_, _ uintptr, e unix.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

func attempts() map[string]string {
	r := map[string]string{}
	try := func(name string, err error) { r[name] = result(err) }

	_ = os.MkdirAll("/tmp/probe-mnt", 0o755)
	try("mount_tmpfs", unix.Mount("tmpfs", "/tmp/probe-mnt", "tmpfs", 0, ""))
	try("remount_usr_rw", unix.Mount("", "/usr", "", unix.MS_REMOUNT|unix.MS_BIND, ""))
	try("remount_root_ro", unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""))
	try("umount_usr", unix.Unmount("/usr", unix.MNT_DETACH))
	try("umount_proc", unix.Unmount("/proc", unix.MNT_DETACH))
	try("pivot_root", unix.PivotRoot("/tmp", "/tmp/probe-mnt"))
	try("chroot", unix.Chroot("/tmp"))
	for name, flag := range map[string]int{
		"user": unix.CLONE_NEWUSER, "mount": unix.CLONE_NEWNS, "pid": unix.CLONE_NEWPID,
		"net": unix.CLONE_NEWNET, "ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS,
		"cgroup": unix.CLONE_NEWCGROUP, "time": unix.CLONE_NEWTIME,
	} {
		try("unshare_"+name, unix.Unshare(flag))
	}
	for _, ns := range []string{"mnt", "pid", "net", "user", "cgroup"} {
		fd, err := unix.Open("/proc/1/ns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, 0)
			unix.Close(fd)
		}
		try("setns_"+ns, err)
	}
	try("ptrace_attach_init", unix.PtraceAttach(1))
	try("ptrace_traceme", errnoOf(unix.RawSyscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)))
	buf := make([]byte, 8)
	local := []unix.Iovec{{Base: &buf[0], Len: 8}}
	remote := []unix.RemoteIovec{{Base: uintptr(0x400000), Len: 8}}
	_, err := unix.ProcessVMReadv(1, local, remote, 0)
	try("process_vm_readv_init", err)
	for _, f := range []string{"/proc/1/environ", "/proc/1/mem", "/proc/1/root/", "/proc/1/cwd/", "/proc/1/fd/0"} {
		_, err := os.ReadFile(f)
		if err == nil {
			_, err = os.ReadDir(f)
		}
		try("read_"+f, err)
	}
	empty := []byte{0}
	try("init_module", errnoOf(unix.Syscall(unix.SYS_INIT_MODULE, uintptr(unsafe.Pointer(&empty[0])), 1, uintptr(unsafe.Pointer(&empty[0])))))
	if fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0); err == nil {
		try("finit_module", unix.FinitModule(fd, "", 0))
		unix.Close(fd)
	}
	try("delete_module", unix.DeleteModule("loop", 0))
	try("bpf", errnoOf(unix.Syscall(unix.SYS_BPF, 0, 0, 0)))
	try("keyctl", errnoOf(unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, ^uintptr(2) /* KEY_SPEC_SESSION_KEYRING, -3 */, 0)))
	try("add_key", errnoOf(unix.Syscall6(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0, 0)))
	try("kexec_load", errnoOf(unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0, 0, 0)))
	try("perf_event_open", errnoOf(unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, 0, 0, 0, 0)))
	try("userfaultfd", errnoOf(unix.Syscall(unix.SYS_USERFAULTFD, 0, 0, 0)))
	try("io_uring_setup", errnoOf(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)))
	try("open_by_handle_at", errnoOf(unix.Syscall(unix.SYS_OPEN_BY_HANDLE_AT, 0, 0, 0)))
	try("mknod_char_device", unix.Mknod("/tmp/probe-mem", unix.S_IFCHR|0o666, int(unix.Mkdev(1, 1))))
	try("swapon", errnoOf(unix.Syscall(unix.SYS_SWAPON, 0, 0, 0)))
	try("settimeofday", unix.Settimeofday(&unix.Timeval{Sec: 1}))
	try("sethostname", unix.Sethostname([]byte("escaped")))
	try("syslog_read", errnoOf(unix.Syscall(unix.SYS_SYSLOG, 3, 0, 0)))
	try("reboot_cad_off", unix.Reboot(unix.LINUX_REBOOT_CMD_CAD_OFF))
	// The seccomp filter is an allowlist: a real call it leaves out (one any
	// user may make) and a number no kernel has assigned both fail.
	var lsmIDs [64]uint64
	lsmSize := uint32(len(lsmIDs) * 8)
	try("unlisted_lsm_list_modules", errnoOf(unix.Syscall(unix.SYS_LSM_LIST_MODULES, uintptr(unsafe.Pointer(&lsmIDs[0])), uintptr(unsafe.Pointer(&lsmSize)), 0)))
	try("unassigned_syscall_1000", errnoOf(unix.Syscall(1000, 0, 0, 0)))
	for _, p := range []string{"/usr/probe-escape", "/usr/bin/probe-escape", "/.hutch/bin/probe-escape", "/proc/acpi/probe-escape"} {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
		}
		try("create_"+p, err)
	}
	try("write_proc_sys", os.WriteFile("/proc/sys/kernel/hostname", []byte("escaped"), 0o644))
	try("write_sysrq_trigger", writeExisting("/proc/sysrq-trigger", "h"))
	try("read_kcore", readSome("/proc/kcore"))
	return r
}

// writeExisting writes s to p without creating it.
func writeExisting(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(s)
	return err
}

// readSome reads a byte of p; reading nothing (a masked file) is an error.
func readSome(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	n, err := f.Read(b)
	if n == 0 {
		return fmt.Errorf("read nothing: %v", err)
	}
	return nil
}
