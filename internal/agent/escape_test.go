package agent_test

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
)

// TestEscapes plants links that point out of the sandbox root and checks
// that every file call resolves them inside the root instead: the root has
// its own etc/passwd, so a call that escaped would see the host's.
func TestEscapes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const inside = "sandbox passwd\n"
	writeHost(t, filepath.Join(f.root, "etc", "passwd"), inside)
	symlink(t, "/etc/passwd", filepath.Join(f.work, "passwd"))
	symlink(t, "../../../../../../../../etc", filepath.Join(f.work, "up"))
	symlink(t, "/etc", filepath.Join(f.work, "outdir"))
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skipf("the host has no /etc/passwd to compare with: %v", err)
	}
	if string(hostPasswd) == inside {
		t.Fatal("host /etc/passwd equals the planted one")
	}

	t.Run("lexical", func(t *testing.T) {
		for _, p := range []string{"..", "../x", "a/../../x", "x\x00y", ""} {
			_, err := f.c.ReadFile(ctx, p)
			wantErr(t, "read "+p, err, errdefs.ErrInvalid, "invalid_path")
		}
		for _, p := range []string{"/etc/passwd", "/", filepath.Dir(f.root)} {
			_, err := f.c.ReadFile(ctx, p)
			wantErr(t, "read "+p, err, errdefs.ErrInvalid, "path_outside_sandbox")
			_, err = f.c.WriteFile(ctx, p, "", false, strings.NewReader("x"))
			wantErr(t, "write "+p, err, errdefs.ErrInvalid, "path_outside_sandbox")
		}
	})

	t.Run("read through links", func(t *testing.T) {
		for _, p := range []string{"passwd", "up/passwd", "outdir/passwd", filepath.Join(f.work, "outdir/passwd")} {
			got, err := f.readAll(t, p)
			if err != nil || got != inside {
				t.Errorf("ReadFile(%s) = %q, %v; want the sandbox's own file", p, got, err)
			}
		}
	})

	t.Run("write, mkdir, list through links", func(t *testing.T) {
		if _, err := f.c.WriteFile(ctx, "outdir/hutch-escape-test", "", false, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.c.Mkdir(ctx, api.MkdirRequest{Path: "up/hutch-escape-dir/sub"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/etc/hutch-escape-test", "/etc/hutch-escape-dir"} {
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists on the host: %v", p, err)
			}
		}
		for _, p := range []string{"etc/hutch-escape-test", "etc/hutch-escape-dir/sub"} {
			if _, err := os.Lstat(filepath.Join(f.root, p)); err != nil {
				t.Errorf("%s was not made inside the root: %v", p, err)
			}
		}
		l, err := f.c.List(ctx, "outdir")
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(names(l), ",")
		if got != "hutch-escape-dir,hutch-escape-test,passwd" {
			t.Errorf("List(outdir) = %s; want the root's etc", got)
		}
		// Overwriting the link replaces the link, not its target.
		if _, err := f.c.WriteFile(ctx, "passwd", "", false, strings.NewReader("replaced")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(f.root, "etc", "passwd")); string(b) != inside {
			t.Errorf("writing over a link wrote its target: %q", b)
		}
		if st, err := f.c.Stat(ctx, "passwd"); err != nil || st.Type != api.FileRegular {
			t.Errorf("Stat(passwd) = %+v, %v; want a regular file", st, err)
		}
	})

	t.Run("remove and move links", func(t *testing.T) {
		if err := f.c.Remove(ctx, "outdir", true); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(f.root, "etc", "passwd")); err != nil {
			t.Errorf("removing a link removed its target: %v", err)
		}
		if _, err := f.c.Move(ctx, api.MoveRequest{From: "up", To: "up2"}); err != nil {
			t.Fatal(err)
		}
		if st, err := f.c.Stat(ctx, "up2"); err != nil || st.Type != api.FileSymlink {
			t.Errorf("moved link = %+v, %v", st, err)
		}
		if _, err := os.Stat("/etc/passwd"); err != nil {
			t.Errorf("host /etc/passwd: %v", err)
		}
	})

	t.Run("tar download keeps links as links", func(t *testing.T) {
		rc, err := f.c.TarDownload(ctx, ".")
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
		stdout, _, res := f.run(t, api.ExecRequest{Cmd: []string{"pwd"}, Cwd: "up2"})
		realRoot, _ := filepath.EvalSymlinks(f.root)
		if res.ExitCode != 0 || strings.TrimSpace(stdout) != filepath.Join(realRoot, "etc") {
			t.Errorf("pwd in up2 = %q (exit %d), want the root's etc", stdout, res.ExitCode)
		}
	})
}

// TestDirectorySwappedForLink: a directory the client named is replaced by
// a link out of the root; the next call still stays inside.
func TestDirectorySwappedForLink(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.c.WriteFile(ctx, "d/x", "", false, strings.NewReader("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if _, err := f.c.Mkdir(ctx, api.MkdirRequest{Path: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.work, "d")); err != nil {
		t.Fatal(err)
	}
	symlink(t, "/", filepath.Join(f.work, "d"))
	writeHost(t, filepath.Join(f.root, "marker"), "root marker")
	got, err := f.readAll(t, "d/marker")
	if err != nil || got != "root marker" {
		t.Errorf("ReadFile(d/marker) = %q, %v; want the sandbox root's marker", got, err)
	}
	_, err = f.c.ReadFile(ctx, "d/etc/passwd")
	wantErr(t, "read d/etc/passwd", err, errdefs.ErrNotFound, "file_not_found")
}

// TestProcRefused: where the agent's root holds a /proc (the namespace
// driver's root is the sandbox's /), /proc/self there is the agent: its
// descriptors' links, its exe and its mounts describe a process the host
// started. No file call may open anything on a proc file system, whatever
// name or symlink leads there, nor may a tar download enter one.
func TestProcRefused(t *testing.T) {
	f := newFixtureWith(t, func(c *agent.Config) { c.Root = "/" })
	ctx := context.Background()
	symlink(t, "/proc/self/fd", filepath.Join(f.work, "fds"))
	pid := strconv.Itoa(os.Getpid())
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := tids[len(tids)-1].Name() // a thread, maybe not the leader
	for _, p := range []string{"/proc/self/fd", "/proc/thread-self/fd", "/proc/" + pid + "/fd", "/proc/" + tid,
		"/proc/" + pid + "/task/" + tid + "/fd", "/proc/net", "/dev/fd", "fds", "/proc", "/proc/1"} {
		_, err := f.c.List(ctx, p)
		wantErr(t, "list "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	for _, p := range []string{"/proc/self/exe", "/proc/self/fd/0", "fds/0", "/proc/self"} {
		_, err := f.c.Stat(ctx, p)
		wantErr(t, "stat "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	for _, p := range []string{"/proc/net/unix", "/proc/self/mountinfo", "/proc/cpuinfo"} {
		_, err := f.c.ReadFile(ctx, p)
		wantErr(t, "read "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	for _, p := range []string{"/proc/self", "/proc"} {
		_, err := f.c.TarDownload(ctx, p)
		wantErr(t, "tar "+p, err, errdefs.ErrForbidden, "path_in_proc")
		_, err = f.c.Watch(ctx, p, false)
		wantErr(t, "watch "+p, err, errdefs.ErrForbidden, "path_in_proc")
	}
	_, err = f.c.WriteFile(ctx, "/proc/self/comm", "", false, strings.NewReader("x"))
	wantErr(t, "write /proc/self/comm", err, errdefs.ErrForbidden, "path_in_proc")
	_, err = f.c.Exec(ctx, api.ExecRequest{Cmd: []string{"pwd"}, Cwd: "/proc/self/fd"})
	wantErr(t, "exec in /proc/self/fd", err, errdefs.ErrForbidden, "path_in_proc")
	// The rest of the root is served: a listing of / names proc.
	if _, err := f.c.Stat(ctx, "/proc"); err != nil {
		t.Errorf("stat /proc (the mount point, in /): %v", err)
	}

	t.Run("tar download skips a proc below", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a proc file system needs root; CI runs this as root")
		}
		p := filepath.Join(f.work, "src", "p")
		writeHost(t, filepath.Join(f.work, "src", "kept"), "kept")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("proc", p, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			t.Skipf("cannot mount a proc here: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
		rc, err := f.c.TarDownload(ctx, filepath.Join(f.work, "src"))
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
	f := newFixtureWith(t, func(c *agent.Config) { c.Root = "/" })
	pid := strconv.Itoa(os.Getpid())
	for _, name := range []string{"proc/" + pid + "/x", "proc/" + pid + "/new/x", "proc/sys/x"} {
		_, err := f.c.TarUpload(context.Background(), "/", makeTar(t, tar.Header{Name: name, Typeflag: tar.TypeReg, Linkname: "x"}))
		wantErr(t, "upload "+name, err, errdefs.ErrForbidden, "path_in_proc")
	}
}
