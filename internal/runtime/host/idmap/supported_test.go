package idmap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/host/idmap"
	"github.com/hutchdev/hutch/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestSupported runs the trial on filesystems that support id-mapped
// mounts and on one that does not (ramfs), and checks the trial leaves
// nothing behind.
func TestSupported(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
		want string // in the error; "" for supported
	}{
		{"TMPDIR", func(t *testing.T) string { return t.TempDir() }, ""},
		{"tmpfs", func(t *testing.T) string { return testutil.Tmpfs(t, "") }, ""},
		{"ramfs", ramfs, "ramfs filesystem holding"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir(t)
			before := openFDs(t)
			err := idmap.Supported(dir)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Supported(%s): %v", dir, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Supported(%s): %v, want an error with %q", dir, err, c.want)
			}
			if err != nil {
				t.Logf("Supported: %v", err)
			}
			if after := openFDs(t); after != before {
				t.Errorf("%d descriptors open before Supported, %d after", before, after)
			}
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Errorf("Supported left %d entries in %s (%v)", len(ents), dir, err)
			}
		})
	}
}

// ramfs mounts a ramfs, which has no id-mapped mounts, for t.
func ramfs(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "ramfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("mount ramfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestSupportedNotRoot runs the trial without privilege: it must say so.
func TestSupportedNotRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("runs as an unprivileged user; TestRootless starts it so from a root run")
	}
	err := idmap.Supported(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "not root") {
		t.Fatalf("Supported as uid %d: %v, want a not-root error", os.Geteuid(), err)
	}
	t.Logf("Supported: %v", err)
}

// TestRootless runs TestSupportedNotRoot as nobody from a root run.
func TestRootless(t *testing.T) {
	requireRoot(t)
	dir, err := os.MkdirTemp("", "hutch-idmap-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := testutil.RerunAsNobody(t, dir, []string{"-test.run=^TestSupportedNotRoot$", "-test.count=1", "-test.v"})
	if !strings.Contains(string(out), "--- PASS: TestSupportedNotRoot") {
		t.Fatalf("TestSupportedNotRoot did not pass as uid %d:\n%s", testutil.Nobody, out)
	}
	t.Logf("as uid %d:\n%s", testutil.Nobody, out)
}
