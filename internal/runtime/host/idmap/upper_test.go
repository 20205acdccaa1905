package idmap_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/runtime/host/idmap"
)

// TestOverlayOnIdmappedUpper: a sandbox's writable layer on a writable
// id-mapped mount keeps, on disk, the ids the sandbox sees (0 for its
// root, 1000 for its user), not the host range its user namespace maps
// them to: so the layer can be copied to another sandbox as it is.
func TestOverlayOnIdmappedUpper(t *testing.T) {
	requireRoot(t)
	base := sharedDir(t)
	lower, rw := filepath.Join(base, "lower"), filepath.Join(base, "rw")
	for _, d := range []string{lower, rw, filepath.Join(rw, "fs"), filepath.Join(rw, "work"), filepath.Join(base, "l"), filepath.Join(base, "m")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(rw, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lower, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(base, "m"), idBase, idBase); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(base, "m")
	s := startSandbox(t, "/bin/sh", "-c", "read x; mount -t overlay overlay -o lowerdir="+base+"/l,upperdir="+rw+"/fs,workdir="+rw+"/work,userxattr "+m+
		" && echo hi > "+m+"/new && mkdir "+m+"/d && chown 1000:1000 "+m+"/d && echo more >> "+m+"/f && stat -c '%u:%g %n' "+m+"/new "+m+"/d "+m+"/f")
	userns, err := idmap.UsernsFD(s.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(userns)
	lfd, err := idmap.Mount(lower, userns)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	wfd, err := idmap.MountWritable(rw, userns)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wfd)
	// The writable layer is mounted over itself, as the driver does.
	if err := idmap.Attach(s.cmd.Process.Pid, []int{lfd, wfd}, []string{filepath.Join(base, "l"), rw}); err != nil {
		t.Fatal(err)
	}
	want := "0:0 " + m + "/new\n1000:1000 " + m + "/d\n0:0 " + m + "/f\n"
	if out := s.wait(t); out != want {
		t.Errorf("inside the sandbox: %q; want %q", out, want)
	}
	for p, want := range map[string][2]uint32{"fs/new": {0, 0}, "fs/d": {1000, 1000}, "fs/f": {0, 0}} {
		if got := owner(t, filepath.Join(rw, p)); got != want {
			t.Errorf("on disk %s is owned by %v; want %v, the sandbox's own ids", p, got, want)
		}
	}
}
