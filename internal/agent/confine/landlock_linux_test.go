package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func init() {
	scenarios["landlock_fs"] = childLandlockFS
	scenarios["landlock_tcp"] = childLandlockTCP
	scenarios["landlock_scope"] = childLandlockScope
	scenarios["landlock_threads_domains"] = childLandlockThreadDomains
}

func TestFSRightsByABI(t *testing.T) {
	for _, tc := range []struct {
		abi            int
		refer, trunc   bool
		ioctl, resolve bool
	}{
		{1, false, false, false, false},
		{2, true, false, false, false},
		{3, true, true, false, false},
		{4, true, true, false, false},
		{5, true, true, true, false},
		{8, true, true, true, false},
		{9, true, true, true, true},
	} {
		r := fsRights(tc.abi)
		got := [4]bool{
			r&unix.LANDLOCK_ACCESS_FS_REFER != 0,
			r&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0,
			r&unix.LANDLOCK_ACCESS_FS_IOCTL_DEV != 0,
			r&unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX != 0,
		}
		if want := [4]bool{tc.refer, tc.trunc, tc.ioctl, tc.resolve}; got != want {
			t.Errorf("ABI %d: refer, truncate, ioctl_dev, resolve_unix = %v, want %v", tc.abi, got, want)
		}
		if r&fsRightsV1 != fsRightsV1 {
			t.Errorf("ABI %d lacks some ABI 1 rights: %#x", tc.abi, r)
		}
	}
}

// TestLandlockFS: reads inside the allowed trees work and outside fail;
// ReadOnly trees refuse writes but run programs; a file given as its own
// rule is readable while its siblings are not; missing paths are skipped.
func TestLandlockFS(t *testing.T) {
	abi := needLandlock(t, 1)
	dir := t.TempDir()
	ro, rw, out := filepath.Join(dir, "ro"), filepath.Join(dir, "rw"), filepath.Join(dir, "out")
	for _, d := range []string{ro, rw, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(ro, "a.txt"), "hello", 0o644)
	writeFile(t, filepath.Join(out, "secret.txt"), "secret", 0o644)
	writeFile(t, filepath.Join(out, "one-file.txt"), "one", 0o644)
	trueBin, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true to run: %v", err)
	}
	writeFile(t, filepath.Join(ro, "true"), string(trueBin), 0o755)
	writeFile(t, filepath.Join(out, "true"), string(trueBin), 0o755)

	cfg := Config{NoNewPrivs: true, Landlock: &Landlock{
		ReadOnly: slices.Concat(systemRO, []string{ro, filepath.Join(out, "one-file.txt")}),
		// /dev/null is a file: it gets only the file rights of ReadWrite.
		ReadWrite: []string{rw, filepath.Join(dir, "does-not-exist"), "/dev/null"},
		Required:  true,
	}}
	rep := runChild(t, "landlock_fs", childArgs{Config: cfg, Dir: dir, ABI: abi})
	if rep.LandlockABI != abi {
		t.Errorf("Report.LandlockABI = %d, want %d", rep.LandlockABI, abi)
	}
	if hasMissing(rep, MissingLandlock) {
		t.Errorf("Report.Missing = %v holds %q on a kernel with Landlock", rep.Missing, MissingLandlock)
	}
	if got, want := hasMissing(rep, MissingLandlockTSync), abi < 8; got != want {
		t.Errorf("Report.Missing = %v: %q listed %v, want %v at ABI %d", rep.Missing, MissingLandlockTSync, got, want, abi)
	}
}

func childLandlockFS(a *childArgs) error {
	ro, rw, out := filepath.Join(a.Dir, "ro"), filepath.Join(a.Dir, "rw"), filepath.Join(a.Dir, "out")
	var c checks
	_, err := os.ReadFile(filepath.Join(out, "secret.txt"))
	c.ok("control: read outside before Apply", err)

	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}

	b, err := os.ReadFile(filepath.Join(ro, "a.txt"))
	c.ok("read under ReadOnly", err)
	c.that(fmt.Sprintf("read under ReadOnly returned %q, want hello", b), string(b) == "hello")
	_, err = os.ReadDir(ro)
	c.ok("list ReadOnly dir", err)
	_, err = os.ReadFile(filepath.Join(out, "secret.txt"))
	c.errno("read outside", err, unix.EACCES)
	_, err = os.ReadDir(out)
	c.errno("list outside", err, unix.EACCES)
	_, err = os.ReadFile(filepath.Join(out, "one-file.txt"))
	c.ok("read a file given as its own rule", err)

	err = os.WriteFile(filepath.Join(ro, "new.txt"), []byte("x"), 0o644)
	c.errno("create under ReadOnly", err, unix.EACCES)
	_, err = os.OpenFile(filepath.Join(ro, "a.txt"), os.O_WRONLY, 0)
	c.errno("open for writing under ReadOnly", err, unix.EACCES)
	err = os.Remove(filepath.Join(ro, "a.txt"))
	c.errno("remove under ReadOnly", err, unix.EACCES)
	if a.ABI >= 3 {
		c.errno("truncate under ReadOnly", unix.Truncate(filepath.Join(ro, "a.txt"), 0), unix.EACCES)
	}
	err = os.WriteFile(filepath.Join(a.Dir, "top.txt"), []byte("x"), 0o644)
	c.errno("create in the unlisted parent", err, unix.EACCES)

	c.ok("create under ReadWrite", os.WriteFile(filepath.Join(rw, "new.txt"), []byte("x"), 0o644))
	c.ok("mkdir under ReadWrite", os.Mkdir(filepath.Join(rw, "sub"), 0o755))
	c.ok("rename under ReadWrite", os.Rename(filepath.Join(rw, "new.txt"), filepath.Join(rw, "sub", "new.txt")))
	c.ok("truncate under ReadWrite", os.Truncate(filepath.Join(rw, "sub", "new.txt"), 0))
	c.ok("remove under ReadWrite", os.Remove(filepath.Join(rw, "sub", "new.txt")))

	c.ok("run /bin/true", exec.Command("/bin/true").Run())
	c.ok("run a program under ReadOnly", exec.Command(filepath.Join(ro, "true")).Run())
	c.errno("run a program outside", exec.Command(filepath.Join(out, "true")).Run(), unix.EACCES)
	return c.err()
}

// TestLandlockTCP: with DenyTCP the child reaches the parent's listener on
// a port in ConnectPorts and not the one on another port, and cannot bind.
func TestLandlockTCP(t *testing.T) {
	needLandlock(t, 4)
	allowed, denied := listenTCP(t), listenTCP(t)
	cfg := Config{NoNewPrivs: true, Landlock: &Landlock{
		ReadOnly:     []string{"/"},
		DenyTCP:      true,
		ConnectPorts: []uint16{uint16(allowed)},
	}}
	rep := runChild(t, "landlock_tcp", childArgs{Config: cfg, Ports: []int{allowed, denied}})
	if hasMissing(rep, MissingLandlockTCP) {
		t.Errorf("Report.Missing = %v holds %q at ABI >= 4", rep.Missing, MissingLandlockTCP)
	}
}

func childLandlockTCP(a *childArgs) error {
	allowed, denied := a.Ports[0], a.Ports[1]
	var c checks
	c.ok("control: connect before Apply", connectTCP(denied))

	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}

	c.ok("connect to a port in ConnectPorts", connectTCP(allowed))
	c.errno("connect to another port", connectTCP(denied), unix.EACCES)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	c.ok("tcp socket", err)
	if err == nil {
		c.errno("bind", unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}), unix.EACCES)
		unix.Close(fd)
	}
	return c.err()
}

// needScope skips t unless Landlock can scope signals and abstract sockets.
func needScope(t *testing.T) int {
	t.Helper()
	abi := needLandlock(t, 6)
	if !scopeUsable(abi) {
		t.Skip("Landlock lacks erratum 2 (scoped signals between threads), so Apply does not scope")
	}
	return abi
}

// TestLandlockScope: with Scope the child can neither connect to the
// parent's abstract unix socket nor signal the parent, while it still can
// do both within its own domain.
func TestLandlockScope(t *testing.T) {
	needScope(t)
	name := listenAbstract(t)
	cfg := Config{NoNewPrivs: true, Landlock: &Landlock{ReadOnly: []string{"/"}, ReadWrite: []string{"/dev/null"}, Scope: true}}
	rep := runChild(t, "landlock_scope", childArgs{Config: cfg, Abstract: name})
	if hasMissing(rep, MissingLandlockScope) {
		t.Errorf("Report.Missing = %v holds %q", rep.Missing, MissingLandlockScope)
	}
}

func childLandlockScope(a *childArgs) error {
	var c checks
	ppid := os.Getppid()
	c.ok("control: connect to the parent's abstract socket before Apply", connectAbstract(a.Abstract))
	c.ok("control: signal the parent before Apply", unix.Kill(ppid, 0))

	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}

	c.errno("connect to the parent's abstract socket", connectAbstract(a.Abstract), unix.EPERM)
	c.errno("signal the parent", unix.Kill(ppid, 0), unix.EPERM)
	c.ok("signal itself", unix.Kill(os.Getpid(), 0))

	// Inside the domain both still work. One locked thread does it all: on
	// ABI < 8 every thread has its own domain (see the next test).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own := fmt.Sprintf("hutch-confine-own-%d", os.Getpid())
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	c.ok("unix socket", err)
	if err == nil {
		c.ok("bind own abstract socket", unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + own}))
		c.ok("listen", unix.Listen(fd, 1))
		c.ok("connect to own abstract socket", connectAbstract(own))
		unix.Close(fd)
	}
	cmd := exec.Command("/bin/sleep", "60")
	if err := cmd.Start(); err != nil {
		c.ok("start a child", err)
	} else {
		c.ok("signal own child", cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
	}
	return c.err()
}

// TestLandlockThreadDomains pins down what MissingLandlockTSync means.
// Before ABI 8 each thread is restricted on its own and so gets its own
// domain: a process started from one thread is then out of reach of
// another thread's scoped signals and of its ptrace access checks (which
// /proc/<pid>/cwd and friends make). From ABI 8 the
// threads share one domain and both work.
func TestLandlockThreadDomains(t *testing.T) {
	abi := needScope(t)
	cfg := Config{NoNewPrivs: true, Landlock: &Landlock{ReadOnly: []string{"/"}, ReadWrite: []string{"/dev/null"}, Scope: true}}
	rep := runChild(t, "landlock_threads_domains", childArgs{Config: cfg, ABI: abi})
	if got, want := hasMissing(rep, MissingLandlockTSync), abi < 8; got != want {
		t.Errorf("Report.Missing = %v: %q listed %v, want %v at ABI %d", rep.Missing, MissingLandlockTSync, got, want, abi)
	}
}

func childLandlockThreadDomains(a *childArgs) error {
	// Both threads exist before Apply, so on ABI < 8 each gets a domain of
	// its own.
	starter, other := startLockedWorker(), startLockedWorker()
	if err := applyAndPrint(&a.Config); err != nil {
		return err
	}
	var c checks
	var cmd *exec.Cmd
	var err error
	starter.run(func() {
		cmd = exec.Command("/bin/sleep", "60")
		err = cmd.Start()
	})
	if err != nil {
		return fmt.Errorf("start a child: %w", err)
	}
	var sigErr, procErr error
	other.run(func() {
		sigErr = cmd.Process.Signal(syscall.Signal(0))
		_, procErr = os.Readlink(fmt.Sprintf("/proc/%d/cwd", cmd.Process.Pid))
	})
	starter.run(func() {
		c.ok("signal from the starting thread", cmd.Process.Signal(syscall.Signal(0)))
		_, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", cmd.Process.Pid))
		c.ok("readlink /proc/<child>/cwd from the starting thread", err)
		c.ok("kill from the starting thread", cmd.Process.Kill())
		cmd.Wait()
	})
	if a.ABI >= 8 {
		c.ok("signal from another thread", sigErr)
		c.ok("readlink /proc/<child>/cwd from another thread", procErr)
	} else {
		c.errno("signal from another thread (sibling domain)", sigErr, unix.EPERM)
		c.errno("readlink /proc/<child>/cwd from another thread (sibling domain)", procErr, unix.EACCES)
	}
	return c.err()
}

// lockedWorker runs functions on one OS thread of its own.
type lockedWorker struct{ do chan func() }

func startLockedWorker() *lockedWorker {
	w := &lockedWorker{do: make(chan func())}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread stays this worker's
		close(ready)
		for f := range w.do {
			f()
		}
	}()
	<-ready
	return w
}

func (w *lockedWorker) run(f func()) {
	done := make(chan struct{})
	w.do <- func() { f(); close(done) }
	<-done
}
