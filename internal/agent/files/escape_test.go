package files_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// TestEscapes plants links that point out of the sandbox root and checks
// that every file call resolves them inside the root instead: the root has
// its own etc/passwd, so a call that escaped would see the host's.
func TestEscapes(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	const inside = "sandbox passwd\n"
	agenttest.WriteHost(t, filepath.Join(f.Root, "etc", "passwd"), inside)
	agenttest.Symlink(t, "/etc/passwd", filepath.Join(f.Work, "passwd"))
	agenttest.Symlink(t, "../../../../../../../../etc", filepath.Join(f.Work, "up"))
	agenttest.Symlink(t, "/etc", filepath.Join(f.Work, "outdir"))
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skipf("the host has no /etc/passwd to compare with: %v", err)
	}
	if string(hostPasswd) == inside {
		t.Fatal("host /etc/passwd equals the planted one")
	}

	t.Run("lexical", func(t *testing.T) {
		for _, p := range []string{"..", "../x", "a/../../x", "x\x00y", ""} {
			_, err := f.Client.ReadFile(ctx, p)
			agenttest.WantErr(t, "read "+p, err, errdefs.ErrInvalid, "invalid_path")
		}
		for _, p := range []string{"/etc/passwd", "/", filepath.Dir(f.Root)} {
			_, err := f.Client.ReadFile(ctx, p)
			agenttest.WantErr(t, "read "+p, err, errdefs.ErrInvalid, "path_outside_sandbox")
			_, err = f.Client.WriteFile(ctx, p, "", false, strings.NewReader("x"))
			agenttest.WantErr(t, "write "+p, err, errdefs.ErrInvalid, "path_outside_sandbox")
		}
	})

	t.Run("read through links", func(t *testing.T) {
		for _, p := range []string{"passwd", "up/passwd", "outdir/passwd", filepath.Join(f.Work, "outdir/passwd")} {
			got, err := f.ReadAll(t, p)
			if err != nil || got != inside {
				t.Errorf("ReadFile(%s) = %q, %v; want the sandbox's own file", p, got, err)
			}
		}
	})

	t.Run("write, mkdir, list through links", func(t *testing.T) {
		if _, err := f.Client.WriteFile(ctx, "outdir/hutch-escape-test", "", false, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Client.Mkdir(ctx, api.MkdirRequest{Path: "up/hutch-escape-dir/sub"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/etc/hutch-escape-test", "/etc/hutch-escape-dir"} {
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists on the host: %v", p, err)
			}
		}
		for _, p := range []string{"etc/hutch-escape-test", "etc/hutch-escape-dir/sub"} {
			if _, err := os.Lstat(filepath.Join(f.Root, p)); err != nil {
				t.Errorf("%s was not made inside the root: %v", p, err)
			}
		}
		l, err := f.Client.List(ctx, "outdir")
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(names(l), ",")
		if got != "hutch-escape-dir,hutch-escape-test,passwd" {
			t.Errorf("List(outdir) = %s; want the root's etc", got)
		}
		// Overwriting the link replaces the link, not its target.
		if _, err := f.Client.WriteFile(ctx, "passwd", "", false, strings.NewReader("replaced")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(f.Root, "etc", "passwd")); string(b) != inside {
			t.Errorf("writing over a link wrote its target: %q", b)
		}
		if st, err := f.Client.Stat(ctx, "passwd"); err != nil || st.Type != api.FileRegular {
			t.Errorf("Stat(passwd) = %+v, %v; want a regular file", st, err)
		}
	})

	t.Run("remove and move links", func(t *testing.T) {
		if err := f.Client.Remove(ctx, "outdir", true); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(f.Root, "etc", "passwd")); err != nil {
			t.Errorf("removing a link removed its target: %v", err)
		}
		if _, err := f.Client.Move(ctx, api.MoveRequest{From: "up", To: "up2"}); err != nil {
			t.Fatal(err)
		}
		if st, err := f.Client.Stat(ctx, "up2"); err != nil || st.Type != api.FileSymlink {
			t.Errorf("moved link = %+v, %v", st, err)
		}
		if _, err := os.Stat("/etc/passwd"); err != nil {
			t.Errorf("host /etc/passwd: %v", err)
		}
	})

	t.Run("tar download keeps links as links", func(t *testing.T) {
		rc, err := f.Client.TarDownload(ctx, ".")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			if strings.Contains(string(b), string(hostPasswd)) {
				t.Errorf("tar entry %s holds host content", hdr.Name)
			}
			if hdr.Name == "up2" && (hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != "../../../../../../../../etc") {
				t.Errorf("up2 entry = %+v, want a symlink", hdr)
			}
		}
	})

	t.Run("exec cwd through a link", func(t *testing.T) {
		stdout, _, res := f.Run(t, api.ExecRequest{Cmd: []string{"pwd"}, Cwd: "up2"})
		realRoot, _ := filepath.EvalSymlinks(f.Root)
		if res.ExitCode != 0 || strings.TrimSpace(stdout) != filepath.Join(realRoot, "etc") {
			t.Errorf("pwd in up2 = %q (exit %d), want the root's etc", stdout, res.ExitCode)
		}
	})
}

// TestDirectorySwappedForLink: a directory the client named is replaced by
// a link out of the root; the next call still stays inside.
func TestDirectorySwappedForLink(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	if _, err := f.Client.WriteFile(ctx, "d/x", "", false, strings.NewReader("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if _, err := f.Client.Mkdir(ctx, api.MkdirRequest{Path: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.Work, "d")); err != nil {
		t.Fatal(err)
	}
	agenttest.Symlink(t, "/", filepath.Join(f.Work, "d"))
	agenttest.WriteHost(t, filepath.Join(f.Root, "marker"), "root marker")
	got, err := f.ReadAll(t, "d/marker")
	if err != nil || got != "root marker" {
		t.Errorf("ReadFile(d/marker) = %q, %v; want the sandbox root's marker", got, err)
	}
	_, err = f.Client.ReadFile(ctx, "d/etc/passwd")
	agenttest.WantErr(t, "read d/etc/passwd", err, errdefs.ErrNotFound, "file_not_found")
}

// TestProcRefused: where the agent's root holds a /proc (the namespace
// driver's root is the sandbox's /), /proc/self there is the agent: its
// descriptors' links, its exe and its mounts describe a process the host
// started. No file call may open anything on a proc file system, whatever
// name or symlink leads there, nor may a tar download enter one.
func TestProcRefused(t *testing.T) {
	f := agenttest.New(t, func(c *agent.Config) { c.Root = "/" })
	ctx := context.Background()
	agenttest.Symlink(t, "/proc/self/fd", filepath.Join(f.Work, "fds"))
	pid := strconv.Itoa(os.Getpid())
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := tids[len(tids)-1].Name() // a thread, maybe not the leader
	for _, p := range []string{"/proc/self/fd", "/proc/thread-self/fd", "/proc/" + pid + "/fd", "/proc/" + tid,
		"/proc/" + pid + "/task/" + tid + "/fd", "/proc/net", "/dev/fd", "fds", "/proc", "/proc/1"} {
		_, err := f.Client.List(ctx, p)
		agenttest.WantErr(t, "list "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	for _, p := range []string{"/proc/self/exe", "/proc/self/fd/0", "fds/0", "/proc/self"} {
		_, err := f.Client.Stat(ctx, p)
		agenttest.WantErr(t, "stat "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	for _, p := range []string{"/proc/net/unix", "/proc/self/mountinfo", "/proc/cpuinfo"} {
		_, err := f.Client.ReadFile(ctx, p)
		agenttest.WantErr(t, "read "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	for _, p := range []string{"/proc/self", "/proc"} {
		_, err := f.Client.TarDownload(ctx, p)
		agenttest.WantErr(t, "tar "+p, err, errdefs.ErrForbidden, "path_in_proc")
		_, err = f.Client.Watch(ctx, p, false)
		agenttest.WantErr(t, "watch "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	_, err = f.Client.WriteFile(ctx, "/proc/self/comm", "", false, strings.NewReader("x"))
	agenttest.WantErr(t, "write /proc/self/comm", err, errdefs.ErrForbidden, "path_in_proc")
	_, err = f.Client.Exec(ctx, api.ExecRequest{Cmd: []string{"pwd"}, Cwd: "/proc/self/fd"})
	agenttest.WantErr(t, "exec in /proc/self/fd", err, errdefs.ErrForbidden, "path_in_proc")
	// The rest of the root is served: a listing of / names proc.
	if _, err := f.Client.Stat(ctx, "/proc"); err != nil {
		t.Errorf("stat /proc (the mount point, in /): %v", err)
	}

	t.Run("tar download skips a proc below", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a proc file system needs root; CI runs this as root")
		}
		p := filepath.Join(f.Work, "src", "p")
		agenttest.WriteHost(t, filepath.Join(f.Work, "src", "kept"), "kept")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("proc", p, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			t.Skipf("cannot mount a proc here: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
		rc, err := f.Client.TarDownload(ctx, filepath.Join(f.Work, "src"))
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		var names []string
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("after %d entries: %v", len(names), err)
			}
			names = append(names, hdr.Name)
		}
		if got := strings.Join(names, ","); got != "kept" {
			t.Errorf("download of a directory holding a proc: %.300s; want only kept", got)
		}
	})
}

// TestTarUploadRefusesProc: an upload into / (the namespace driver's
// root) resolves its entries beneath the target, where /proc is too.
func TestTarUploadRefusesProc(t *testing.T) {
	f := agenttest.New(t, func(c *agent.Config) { c.Root = "/" })
	pid := strconv.Itoa(os.Getpid())
	for _, name := range []string{"proc/" + pid + "/x", "proc/" + pid + "/new/x", "proc/sys/x"} {
		_, err := f.Client.TarUpload(context.Background(), "/", makeTar(t, tar.Header{Name: name, Typeflag: tar.TypeReg, Linkname: "x"}))
		agenttest.WantErr(t, "upload "+name, err, errdefs.ErrForbidden, "path_in_proc")
	}
}
