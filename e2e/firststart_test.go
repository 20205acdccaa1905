package e2e

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestFirstStart runs hutch as a new user does: a checkout in a home only
// its owner may enter (root's is 0700 on Debian), the README's first
// command, a sandbox. It gets the namespace driver and changes the mode of
// no directory or file it did not make, and what it makes is its owner's
// only.
func TestFirstStart(t *testing.T) {
	t.Run("root", func(t *testing.T) {
		home := privateDir(t, 0, 0o755)
		checkout := filepath.Join(home, "hutch")
		copyCheckout(t, checkout)
		before := modes(t, checkout)
		cmd := exec.Command("sh", "-c", readmeCommand(t, 0))
		cmd.Dir = checkout
		s := serveFrom(t, cmd, checkout)
		useFirstSandbox(t, s, api.IsolationFull)
		s.stop(true)
		sameModes(t, before, modes(t, checkout))
		ownerOnly(t, filepath.Join(checkout, "hutch-data"))
	})
	t.Run("user", func(t *testing.T) {
		const nobody = 65534
		home := privateDir(t, nobody, 0o755)
		checkout := filepath.Join(home, "hutch")
		// The build is the root case's; here the user runs what it built.
		for _, p := range []string{checkout, filepath.Join(checkout, "bin")} {
			mkdirOwned(t, p, 0o755, nobody)
		}
		for _, name := range []string{"hutch", "hutch-agent"} {
			copyFile(t, filepath.Join(binDir, name), filepath.Join(checkout, "bin", name), 0o755)
			if err := os.Chown(filepath.Join(checkout, "bin", name), nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		before := modes(t, checkout)
		cmd := exec.Command("sh", "-c", readmeCommand(t, 1))
		cmd.Dir = checkout
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
		s := serveFrom(t, cmd, checkout)
		// Rootless: full namespaces, reported degraded for the one uid
		// every sandbox shares.
		useFirstSandbox(t, s, api.IsolationDegraded)
		s.stop(true)
		sameModes(t, before, modes(t, checkout))
		ownerOnly(t, filepath.Join(checkout, "hutch-data"))
	})
}

// privateDir makes <temp>/home, mode 0700 and owned by uid, in a temporary
// directory of mode parentMode.
func privateDir(t *testing.T, uid int, parentMode fs.FileMode) string {
	t.Helper()
	base, err := os.MkdirTemp("", "hutch-firststart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, parentMode); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	mkdirOwned(t, home, 0o700, uid)
	return home
}

func mkdirOwned(t *testing.T, p string, mode fs.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// copyCheckout copies the module's files, as git knows them (a clone of
// the working tree, uncommitted changes included), into dst.
func copyCheckout(t *testing.T, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", "..", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join("..", name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a link
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, src, filepath.Join(dst, name), st.Mode().Perm())
	}
}

func copyFile(t *testing.T, src, dst string, mode fs.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// readmeCommand is the README's first command; part 1 is what follows
// its "&&" (running what it built).
func readmeCommand(t *testing.T, part int) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(b, []byte("```sh\n"))
	block, _, ok2 := bytes.Cut(rest, []byte("\n```"))
	if !ok || !ok2 || !bytes.Contains(block, []byte("hutch serve")) {
		t.Fatalf("the README's first sh block is not the command that runs hutch serve: %q", block)
	}
	cmd := strings.TrimSpace(string(block))
	if part == 1 {
		_, after, ok := strings.Cut(cmd, "&&")
		if !ok {
			t.Fatalf("the README's first command %q has no &&", cmd)
		}
		cmd = strings.TrimSpace(after)
	}
	return cmd
}

// serveFrom runs cmd, a shell that runs hutch serve on its defaults in
// checkout, on a free port, and finds the hutch serve it started.
func serveFrom(t *testing.T, cmd *exec.Cmd, checkout string) *server {
	t.Helper()
	cmd.Env = append(os.Environ(), "HUTCH_LISTEN=127.0.0.1:0", "HUTCH_DATA=", "HUTCH_API_KEY=", "HUTCH_URL=")
	s, _ := watch(t, cmd, filepath.Join(checkout, "hutch-data"), 5*time.Minute)
	kids, err := os.ReadFile("/proc/" + strconv.Itoa(s.pid) + "/task/" + strconv.Itoa(s.pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(kids)); len(f) == 1 {
		s.pid, _ = strconv.Atoi(f[0])
	}
	return s
}

// useFirstSandbox checks the server chose the namespace driver, with
// isolation, and that a sandbox works.
func useFirstSandbox(t *testing.T, s *server, isolation string) {
	t.Helper()
	c := s.client()
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Driver != "namespace" || info.Isolation != isolation {
		t.Fatalf("first start: driver %s, %s isolation (degraded: %v); want namespace, %s", info.Driver, info.Isolation, info.Degraded, isolation)
	}
	// The data directory's filesystem was probed, as root and as nobody,
	// and what it offers is said.
	if st := info.Storage; st == nil || st.Filesystem == "" || st.Snapshot == "" || st.Quota == "" {
		t.Fatalf("first start: storage %+v; want the data directory's filesystem probed", info.Storage)
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo made > f && cat f"}})
	if err != nil || res.Stdout != "made\n" {
		t.Fatalf("exec in the first sandbox = %+v, %v", res, err)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}

// modes maps every directory from / down to dir, and everything below dir,
// to its mode.
func modes(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	m := map[string]fs.FileMode{}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = st.Mode()
		if p == "/" {
			break
		}
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := e.Info()
		if err != nil {
			return err
		}
		m[p] = st.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameModes(t *testing.T, before, after map[string]fs.FileMode) {
	t.Helper()
	for p, m := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s is gone", p)
		} else if a != m {
			t.Errorf("%s changed mode from %v to %v", p, m, a)
		}
	}
}

// ownerOnly checks what hutch made at the top of its data directory is
// its owner's only: the directory 0700, its files 0600, sandboxes/ 0700.
func ownerOnly(t *testing.T, data string) {
	t.Helper()
	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range append(entries, fs.FileInfoToDirEntry(dirInfo(t, data))) {
		st, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		want := fs.FileMode(0o600)
		if st.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s in the data directory has mode %04o; want %04o", e.Name(), st.Mode().Perm(), want)
		}
	}
}

func dirInfo(t *testing.T, p string) fs.FileInfo {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPortInUse: a port already taken is reported, naming --listen,
// before anything is made: no data directory appears.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "hutch"), "serve", "--listen", ln.Addr().String(), "--data", data).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--listen") || !strings.Contains(string(out), ln.Addr().String()) {
		t.Fatalf("hutch serve on a port in use: %v\n%s\nwant a failure naming --listen and the address", err, out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("the data directory was made before the port was checked: %v", err)
	}
}
