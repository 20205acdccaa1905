package idmap_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hutchdev/hutch/internal/runtime/host/idmap"
	"github.com/hutchdev/hutch/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestMountAttach attaches an id-mapped layer in a sandbox's mount
// namespace and looks at it from the host through /proc/<pid>/root: every
// owner shows shifted into the sandbox's range, nothing can be written,
// and the host's own view of the target stays empty, also when the
// target's mount is shared with the host's namespace (as / is under
// systemd): the sandbox's copy of a shared mount is a slave, as the kernel
// makes it for a mount namespace owned by a new user namespace.
func TestMountAttach(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		name   string
		parent func(t *testing.T) string
	}{
		{"private", func(t *testing.T) string { return t.TempDir() }},
		{"shared", sharedTmpfs},
	} {
		t.Run(c.name, func(t *testing.T) {
			layer := filepath.Join(t.TempDir(), "layer")
			makeLayer(t, layer)
			target := mkdirs(t, 0, filepath.Join(c.parent(t), "lower0"))[0]
			sb := startSandbox(t, "cat")
			sb.attach(t, []string{layer}, []string{target})
			checkAttached(t, sb, layer, target)
		})
	}
}

// sharedTmpfs mounts a tmpfs for t and makes it shared.
func sharedTmpfs(t *testing.T) string {
	dir := testutil.Tmpfs(t, "")
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", dir, err)
	}
	return dir
}

func checkAttached(t *testing.T, sb *sandbox, layer, target string) {
	t.Helper()
	inside := fmt.Sprintf("/proc/%d/root%s", sb.cmd.Process.Pid, target)
	got := map[string][2]uint32{}
	for _, p := range []string{".", "root-file", "user-file", "private", "private/secret"} {
		got[p] = owner(t, filepath.Join(inside, p))
	}
	want := map[string][2]uint32{
		".":              {idBase, idBase},
		"root-file":      {idBase, idBase},
		"user-file":      {idBase + 1000, idBase + 1000},
		"private":        {idBase, idBase},
		"private/secret": {idBase, idBase},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("owners through the id-mapped mount (-want +got):\n%s", d)
	}

	for what, write := range map[string]func() error{
		"create a file": func() error { return os.WriteFile(filepath.Join(inside, "new"), nil, 0o644) },
		"write a file":  func() error { return os.WriteFile(filepath.Join(inside, "root-file"), nil, 0o644) },
		"chown a file":  func() error { return os.Lchown(filepath.Join(inside, "user-file"), 0, 0) },
		"make a dir":    func() error { return os.Mkdir(filepath.Join(inside, "dir"), 0o755) },
	} {
		if err := write(); !errors.Is(err, unix.EROFS) {
			t.Errorf("%s through the mount: %v, want EROFS", what, err)
		}
	}

	if ents, err := os.ReadDir(target); err != nil || len(ents) != 0 {
		t.Errorf("the host sees %d entries in %s (%v); the mount must live only in the sandbox's namespace", len(ents), target, err)
	}
	if got := owner(t, filepath.Join(layer, "user-file")); got != [2]uint32{1000, 1000} {
		t.Errorf("the layer's own user-file is now owned by %v", got)
	}
}

// overlayScript runs in the sandbox as its root: it waits for the test to
// attach the lower layers ($1, top first), mounts an overlay on them as
// hutch-agent will (userxattr, in its own user namespace) and reports what
// the sandbox sees, before and after copy-up, one "key value" a line.
const overlayScript = `read go
set -e
m=$5
mount -t overlay overlay -o "lowerdir=$1:$2,upperdir=$3,workdir=$4,userxattr" "$m"
echo "root-file $(stat -c %u:%g "$m/root-file")"
echo "user-file $(stat -c %u:%g "$m/user-file")"
echo "private $(stat -c %u:%g:%a "$m/private") $(cat "$m/private/secret")"
echo "top-file $(stat -c %u:%g "$m/top-file")"
if [ -e "$m/hidden" ]; then echo "whiteout ignored"; else echo "whiteout hides"; fi
echo "opaque-dir $(ls "$m/dir")"
touch "$m/new"
echo "new $(stat -c %u:%g "$m/new")"
touch "$m/user-file"
echo "copied-up-user-file $(stat -c %u:%g "$m/user-file")"
echo appended >>"$m/root-file"
echo "copied-up-root-file $(stat -c %u:%g "$m/root-file")"
if touch "$1/x" 2>/dev/null; then echo "lower writable"; else echo "lower read-only"; fi
`

// TestOverlayOnIdmappedLower proves the layout the namespace driver uses:
// an overlay mounted inside the sandbox's user namespace with userxattr,
// over two id-mapped lower layers as the layer unpacker leaves them (a
// whiteout is a 0/0 character device, an opaque directory has
// user.overlay.opaque=y). The sandbox sees the image's own owners and the
// layers merged; a new file and a copied-up one keep the owner the sandbox
// sees, which on the host's disk is in the sandbox's range (the upper
// layer is not id-mapped); the shared layers stay untouched.
func TestOverlayOnIdmappedLower(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skip("needs mount(8), to mount an overlay from inside the sandbox")
	}
	base := sharedDir(t)
	bottom, top := filepath.Join(base, "layer0"), filepath.Join(base, "layer1")
	makeLayer(t, bottom)
	mkdirs(t, 0, filepath.Join(bottom, "dir"))
	for _, f := range []string{"hidden", "dir/old"} {
		if err := os.WriteFile(filepath.Join(bottom, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdirs(t, 0, top, filepath.Join(top, "dir"))
	if err := unix.Setxattr(filepath.Join(top, "dir"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(top, "hidden"), unix.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"top-file", "dir/new"} {
		if err := os.WriteFile(filepath.Join(top, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(top, "top-file"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	lowers := mkdirs(t, 0, filepath.Join(base, "lower0"), filepath.Join(base, "lower1"))
	rw := mkdirs(t, idBase, filepath.Join(base, "upper"), filepath.Join(base, "work"), filepath.Join(base, "merged"))
	upper := rw[0]

	sb := startSandbox(t, "/bin/sh", "-c", overlayScript, "sh", lowers[1], lowers[0], rw[0], rw[1], rw[2])
	sb.attach(t, []string{bottom, top}, lowers)
	out := sb.wait(t)
	t.Logf("inside the sandbox:\n%s", out)

	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
	want := map[string]string{
		"root-file":           "0:0",
		"user-file":           "1000:1000",
		"private":             "0:0:700 private/secret",
		"top-file":            "1000:1000",
		"whiteout":            "hides",
		"opaque-dir":          "new",
		"new":                 "0:0",
		"copied-up-user-file": "1000:1000",
		"copied-up-root-file": "0:0",
		"lower":               "read-only",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("inside the sandbox (-want +got):\n%s", d)
	}

	disk := map[string][2]uint32{}
	for _, p := range []string{"new", "user-file", "root-file"} {
		disk[p] = owner(t, filepath.Join(upper, p))
	}
	wantDisk := map[string][2]uint32{
		"new":       {idBase, idBase},
		"user-file": {idBase + 1000, idBase + 1000},
		"root-file": {idBase, idBase},
	}
	if d := cmp.Diff(wantDisk, disk); d != "" {
		t.Errorf("owners in the upper layer on the host's disk (-want +got):\n%s", d)
	}
	if b, err := os.ReadFile(filepath.Join(bottom, "root-file")); err != nil || string(b) != "root-file\n" {
		t.Errorf("the shared layer's root-file is now %q (%v)", b, err)
	}
	if got := owner(t, filepath.Join(bottom, "user-file")); got != [2]uint32{1000, 1000} {
		t.Errorf("the shared layer's user-file is now owned by %v", got)
	}
}

// TestAttachGone attaches to a process that has ended: the error says so,
// Attach leaks no descriptor and leaves the caller's mount descriptor
// open and still usable.
func TestAttachGone(t *testing.T) {
	requireRoot(t)
	base := t.TempDir()
	layer := filepath.Join(base, "layer")
	makeLayer(t, layer)
	target := mkdirs(t, 0, filepath.Join(base, "lower0"))[0]
	sb := startSandbox(t, "cat")
	userns, err := idmap.UsernsFD(sb.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(userns)
	fd, err := idmap.Mount(layer, userns)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	err = idmap.Attach(gone.Process.Pid, []int{fd}, []string{target})
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), strconv.Itoa(gone.Process.Pid)) {
		t.Fatalf("Attach to ended process %d: %v, want an error naming it that is fs.ErrNotExist", gone.Process.Pid, err)
	}
	t.Logf("Attach to an ended process: %v", err)
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open before Attach, %d after", before, after)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		t.Fatalf("the mount's descriptor after a failed Attach: %v; the caller owns it", err)
	}
	if err := idmap.Attach(sb.cmd.Process.Pid, []int{fd}, []string{target}); err != nil {
		t.Fatalf("attach the same mount to a live sandbox: %v", err)
	}
	inside := fmt.Sprintf("/proc/%d/root%s/user-file", sb.cmd.Process.Pid, target)
	if got := owner(t, inside); got != [2]uint32{idBase + 1000, idBase + 1000} {
		t.Errorf("%s is owned by %v", inside, got)
	}
}

// TestAttachRefuses gives Attach targets it must refuse. The error names
// the target, no descriptor leaks, and mounts attached before the failing
// target are taken down again.
func TestAttachRefuses(t *testing.T) {
	requireRoot(t)
	base := t.TempDir()
	layer := filepath.Join(base, "layer")
	makeLayer(t, layer)
	good := mkdirs(t, 0, filepath.Join(base, "good"))[0]
	elsewhere := mkdirs(t, 0, filepath.Join(base, "elsewhere"))[0]
	link := filepath.Join(base, "link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sb := startSandbox(t, "cat")
	pid := sb.cmd.Process.Pid
	userns, err := idmap.UsernsFD(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(userns)

	for _, c := range []struct {
		name    string
		mounts  int
		targets []string
		want    string // in the error
	}{
		{"missing", 2, []string{good, filepath.Join(base, "missing")}, filepath.Join(base, "missing")},
		{"symlink", 2, []string{good, link}, link},
		{"file", 2, []string{good, file}, file},
		{"relative", 1, []string{"good"}, "good: not an absolute path"},
		{"count", 1, []string{good, elsewhere}, "1 mounts onto 2 targets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fds := make([]int, c.mounts)
			for i := range fds {
				fd, err := idmap.Mount(layer, userns)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Close(fd)
				fds[i] = fd
			}
			before := openFDs(t)
			err := idmap.Attach(pid, fds, c.targets)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Attach onto %v: %v, want an error with %q", c.targets, err, c.want)
			}
			t.Logf("%v", err)
			if after := openFDs(t); after != before {
				t.Errorf("%d descriptors open before Attach, %d after", before, after)
			}
			for _, dir := range []string{good, elsewhere} {
				inside := fmt.Sprintf("/proc/%d/root%s", pid, dir)
				if ents, err := os.ReadDir(inside); err != nil || len(ents) != 0 {
					t.Errorf("after a failed Attach the sandbox sees %d entries in %s (%v)", len(ents), dir, err)
				}
			}
		})
	}
}

// TestMountMissing id-maps a directory that does not exist.
func TestMountMissing(t *testing.T) {
	requireRoot(t)
	sb := startSandbox(t, "cat")
	userns, err := idmap.UsernsFD(sb.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(userns)
	missing := filepath.Join(t.TempDir(), "missing")
	before := openFDs(t)
	fd, err := idmap.Mount(missing, userns)
	if err == nil {
		unix.Close(fd)
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Mount(%s): %v, want a not-exist error naming it", missing, err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open before Mount, %d after", before, after)
	}
}

// TestUsernsFDGone opens the user namespace of an ended process.
func TestUsernsFDGone(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if fd, err := idmap.UsernsFD(gone.Process.Pid); !errors.Is(err, fs.ErrNotExist) {
		if err == nil {
			unix.Close(fd)
		}
		t.Fatalf("UsernsFD of ended process %d: %v, want fs.ErrNotExist", gone.Process.Pid, err)
	}
}
