package idmap_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/host/idmap"
	"github.com/hutchdev/hutch/internal/testutil"
	"golang.org/x/sys/unix"
)

// idBase is where a test sandbox's ids 0..65535 land on the host, as the
// namespace driver's IDBase would.
const idBase = 2_100_000_000

// requireRoot skips t when the process cannot make id-mapped mounts.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: id-mapped mounts need CAP_SYS_ADMIN; CI runs this as root")
	}
}

// sandbox is a process standing in for hutch-agent: root of a new user
// namespace mapping 0..65535 to idBase.., in a new mount namespace.
type sandbox struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *testutil.Buffer
}

// startSandbox starts argv as a sandbox; it is killed and reaped on t's
// cleanup. Its stdin is a pipe the test holds, so `cat` blocks until the
// test ends, and `read` waits for the test's word.
func startSandbox(t testing.TB, argv ...string) *sandbox {
	t.Helper()
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: idBase, Size: 65536}}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: ids,
		GidMappings: ids,
		Credential:  &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
		// No Pdeathsig: it fires when the thread that started the child
		// ends, and Attach ends threads. The cleanup kills the child.
	}
	s := &sandbox{cmd: cmd, out: &testutil.Buffer{}}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v in new namespaces: %v", argv, err)
	}
	t.Cleanup(func() {
		s.stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return s
}

// wait lets the sandbox's `read` go on and waits for it to end.
func (s *sandbox) wait(t testing.TB) string {
	t.Helper()
	io.WriteString(s.stdin, "go\n")
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("the sandbox's script: %v\n%s", err, s.out)
	}
	return s.out.String()
}

// attach id-maps each of dirs through the sandbox's user namespace and
// attaches them onto targets in its mount namespace.
func (s *sandbox) attach(t testing.TB, dirs, targets []string) {
	t.Helper()
	if err := mountAndAttach(s.cmd.Process.Pid, dirs, targets); err != nil {
		t.Fatal(err)
	}
}

// mountAndAttach is what the driver does for one sandbox: each of dirs,
// read-only, at the target of the same index.
func mountAndAttach(pid int, dirs, targets []string) error {
	ps := make([]idmap.Placement, len(dirs))
	for i := range dirs {
		ps[i] = idmap.Placement{Dir: dirs[i], Target: targets[i]}
	}
	return idmap.Place(pid, ps)
}

// sharedDir makes a directory every user may pass through (t.TempDir is
// 0700 and owned by the host's root, whom a sandbox's root is not), removed
// on t's cleanup.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hutch-idmap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// makeLayer makes dir as an unpacked layer would be, with the image's own
// owners: root-file (0:0), user-file (1000:1000) and private/ (0:0, 0700)
// holding secret.
func makeLayer(t testing.TB, dir string) {
	t.Helper()
	files := []struct {
		path     string
		dir      bool
		mode     os.FileMode
		uid, gid int
	}{
		{"", true, 0o755, 0, 0},
		{"root-file", false, 0o644, 0, 0},
		{"user-file", false, 0o644, 1000, 1000},
		{"private", true, 0o700, 0, 0},
		{"private/secret", false, 0o600, 0, 0},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.path)
		var err error
		if f.dir {
			err = os.Mkdir(p, f.mode)
		} else {
			err = os.WriteFile(p, []byte(f.path+"\n"), f.mode)
		}
		if err == nil {
			err = os.Chmod(p, f.mode)
		}
		if err == nil {
			err = os.Lchown(p, f.uid, f.gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// mkdirs makes each of paths (0755), owned by uid:gid, and returns them.
func mkdirs(t testing.TB, uid int, paths ...string) []string {
	t.Helper()
	for _, p := range paths {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// owner returns path's uid and gid (of the link itself, not its target).
func owner(t testing.TB, path string) [2]uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return [2]uint32{st.Uid, st.Gid}
}

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
