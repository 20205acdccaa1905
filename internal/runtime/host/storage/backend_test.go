package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil"
)

// The backend tests run each backend on the filesystem it is for, made
// for real on a loop device: btrfs (subvolume snapshots, qgroups), xfs
// with reflink (reflink copies), ext4 (byte copies). They need root, as
// CI runs them.

// backendOn makes a filesystem of typ (an image of size bytes; 0 for the
// default), probes it as hutch would and opens its backend.
func backendOn(t *testing.T, typ string, size int64) (*testutil.LoopFS, Backend) {
	t.Helper()
	lfs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: typ, Size: size})
	info, err := Probe(lfs.Dir, lfs.Dir)
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	return lfs, Open(info)
}

// wantMethod is how Copy copies a layer made by Make on each filesystem.
var wantMethod = map[string]Snapshot{"btrfs": SnapshotSubvolume, "xfs": SnapshotReflink, "ext4": SnapshotCopy}

var filesystems = []string{"btrfs", "xfs", "ext4"}

var (
	past  = time.Date(2001, 2, 3, 4, 5, 6, 789_000_000, time.UTC)
	older = time.Date(1999, 12, 31, 23, 59, 58, 123_456_789, time.UTC)
)

// capNetBindService is a security.capability xattr (struct
// vfs_cap_data, revision 2) granting CAP_NET_BIND_SERVICE, permitted and
// effective: a chown after it is set removes it, so its surviving shows
// the copy sets owners before xattrs.
var capNetBindService = string([]byte{
	0x01, 0x00, 0x00, 0x02, // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
	0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // permitted, inheritable (low)
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // permitted, inheritable (high)
})

// userACL is a POSIX ACL in its xattr form (a version, then tag, perm,
// id entries): the owner rw, user 1000 r, the group r, mask r, others
// nothing; a file's mode with it is 0640.
var userACL = string([]byte{
	0x02, 0x00, 0x00, 0x00, // POSIX_ACL_XATTR_VERSION
	0x01, 0x00, 0x06, 0x00, 0xff, 0xff, 0xff, 0xff, // ACL_USER_OBJ rw-
	0x02, 0x00, 0x04, 0x00, 0xe8, 0x03, 0x00, 0x00, // ACL_USER 1000 r--
	0x04, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff, // ACL_GROUP_OBJ r--
	0x10, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff, // ACL_MASK r--
	0x20, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, // ACL_OTHER ---
})

// layerTree is what a sandbox's writable layer can hold: every file type
// overlayfs writes (whiteouts, hard-linked whiteouts, opaque and
// redirected directories), odd modes and owners, holes, xattrs of each
// namespace, and times in the past.
func layerTree() []testutil.TreeEntry {
	long := strings.Repeat("n", 255)
	return []testutil.TreeEntry{
		{Path: "fs", Type: testutil.TypeDir, Mode: 0o755, Mtime: past, Atime: older},
		{Path: "fs/hello.txt", Type: testutil.TypeFile, Mode: 0o644, UID: 1000, GID: 1000, Data: []byte("hello, sandbox\n"), Mtime: past, Atime: older,
			Xattrs: map[string]string{"user.comment": "kept", "trusted.note": "also kept"}},
		{Path: "fs/empty", Type: testutil.TypeFile, Mode: 0o000},
		{Path: "fs/sparse.img", Type: testutil.TypeFile, Mode: 0o600, Data: []byte("the end"), DataAt: 1<<30 - 7, Mtime: past},
		{Path: "fs/holes.img", Type: testutil.TypeFile, Mode: 0o600, Data: []byte(strings.Repeat("middle", 2000)), DataAt: 64 << 20, Size: 256 << 20},
		{Path: "fs/usr", Type: testutil.TypeDir, Mode: 0o755},
		{Path: "fs/usr/bin", Type: testutil.TypeDir, Mode: 0o755},
		{Path: "fs/usr/bin/su", Type: testutil.TypeFile, Mode: 0o4755, Data: []byte("#!/bin/true\n"), Mtime: past},
		{Path: "fs/usr/bin/wall", Type: testutil.TypeFile, Mode: 0o2755, GID: 5, Data: []byte("#!/bin/true\n")},
		{Path: "fs/usr/bin/ping", Type: testutil.TypeFile, Mode: 0o755, UID: 1000, GID: 1000, Data: []byte("#!/bin/true\n"),
			Xattrs: map[string]string{"security.capability": capNetBindService}},
		{Path: "fs/usr/bin/sudo", Type: testutil.TypeHardlink, Target: "fs/usr/bin/su"},
		{Path: "fs/home", Type: testutil.TypeDir, Mode: 0o755},
		{Path: "fs/home/user", Type: testutil.TypeDir, Mode: 0o700, UID: 1000, GID: 1000, Mtime: past, Atime: past},
		{Path: "fs/home/user/a", Type: testutil.TypeDir, Mode: 0o700, UID: 1000, GID: 1000, Mtime: older},
		{Path: "fs/home/user/a/b", Type: testutil.TypeDir, Mode: 0o700, UID: 1000, GID: 1000, Mtime: past, Atime: older},
		{Path: "fs/home/user/a/b/notes", Type: testutil.TypeFile, Mode: 0o600, UID: 1000, GID: 1000, Data: []byte("deep"), Mtime: older},
		{Path: "fs/home/user/" + long, Type: testutil.TypeFile, Mode: 0o640, UID: 1000, GID: 1000},
		{Path: "fs/home/user/dangling", Type: testutil.TypeSymlink, Target: "/nowhere/at/all", UID: 1000, GID: 1000, Mtime: past,
			Xattrs: map[string]string{"trusted.overlay.origin": "x"}},
		{Path: "fs/home/user/passwd", Type: testutil.TypeSymlink, Target: "/etc/passwd"},
		{Path: "fs/home/user/up", Type: testutil.TypeSymlink, Target: "../..", Mtime: older, Atime: past},
		{Path: "fs/tmp", Type: testutil.TypeDir, Mode: 0o1777, Mtime: past},
		{Path: "fs/tmp/fifo", Type: testutil.TypeFifo, Mode: 0o620, UID: 1000, GID: 1000, Mtime: past},
		{Path: "fs/tmp/sock", Type: testutil.TypeSocket, Mode: 0o777, UID: 1000},
		{Path: "fs/srv", Type: testutil.TypeDir, Mode: 0o2775, GID: 50},
		{Path: "fs/srv/shared", Type: testutil.TypeFile, Mode: 0o640, Data: []byte("acl"),
			Xattrs: map[string]string{"system.posix_acl_access": userACL}},
		{Path: "fs/srv/drop", Type: testutil.TypeDir, Mode: 0o750,
			Xattrs: map[string]string{"system.posix_acl_default": userACL}},
		{Path: "fs/opaque", Type: testutil.TypeDir, Mode: 0o755, Mtime: past,
			Xattrs: map[string]string{"user.overlay.opaque": "y", "trusted.overlay.opaque": "y"}},
		{Path: "fs/moved", Type: testutil.TypeDir, Mode: 0o755,
			Xattrs: map[string]string{"user.overlay.redirect": "/opaque/old"}},
		{Path: "fs/etc", Type: testutil.TypeDir, Mode: 0o755},
		{Path: "fs/etc/gone.conf", Type: testutil.TypeChar, Mode: 0o000, Major: 0, Minor: 0, Mtime: past}, // a whiteout
		{Path: "fs/etc/gone-too.conf", Type: testutil.TypeHardlink, Target: "fs/etc/gone.conf"},
		{Path: "fs/etc/null", Type: testutil.TypeChar, Mode: 0o666, Major: 1, Minor: 3},
		{Path: "fs/etc/loop9", Type: testutil.TypeBlock, Mode: 0o660, GID: 6, Major: 7, Minor: 9},
		{Path: "fs/etc/empty.d", Type: testutil.TypeDir, Mode: 0o500, Mtime: older},
		{Path: "work", Type: testutil.TypeDir, Mode: 0o700},
		{Path: "work/work", Type: testutil.TypeDir, Mode: 0o000},
	}
}

func TestCopyExact(t *testing.T) {
	for _, typ := range filesystems {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			lfs, b := backendOn(t, typ, 0)
			src, dst := filepath.Join(lfs.Dir, "upper"), filepath.Join(lfs.Dir, "snap")
			if err := b.Make(src); err != nil {
				t.Fatalf("Make: %v", err)
			}
			testutil.MakeTree(t, src, layerTree())
			// The layer's root itself is copied too.
			if err := os.Chown(src, 1000, 1000); err != nil {
				t.Fatal(err)
			}
			if err := unix.Lsetxattr(src, "user.overlay.impure", []byte("y"), 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(src, older, past); err != nil {
				t.Fatal(err)
			}
			before := testutil.ReadTree(t, src)
			// What the comparison below would miss were it not there.
			for path, want := range map[string]string{
				"fs/srv/shared":   "system.posix_acl_access",
				"fs/srv/drop":     "system.posix_acl_default",
				"fs/usr/bin/ping": "security.capability",
				"fs/opaque":       "trusted.overlay.opaque",
			} {
				if _, ok := before[path].Xattrs[want]; !ok {
					t.Errorf("the source's %s has no %s: %+v", path, want, before[path])
				}
			}
			if n := before["fs/etc/gone.conf"]; n.Type != testutil.TypeChar || n.Rdev != "0:0" || n.Link != "fs/etc/gone-too.conf" {
				t.Errorf("the source's whiteout: %+v", n)
			}
			if n := before["fs/sparse.img"]; len(n.Extents) != 1 || n.Extents[0][0] < 1<<29 {
				t.Errorf("the source's sparse file: %+v", n)
			}

			stats, err := b.Copy(context.Background(), src, dst)
			if err != nil {
				t.Fatalf("Copy: %v", err)
			}
			t.Logf("Copy: %+v", stats)
			if stats.Method != wantMethod[typ] {
				t.Errorf("Copy method = %q, want %q", stats.Method, wantMethod[typ])
			}
			if stats.Method != SnapshotSubvolume {
				// 36 entries below the root: 16 directories, 20 others
				// (two of them second names of a hard link).
				if stats.Files != 20 || stats.Dirs != 16 || stats.ByteCopied != 0 || stats.Mounts != 0 {
					t.Errorf("Copy counted %+v", stats)
				}
			}
			if diff := cmp.Diff(symlinkAtimesOff(before), symlinkAtimesOff(testutil.ReadTree(t, src))); diff != "" {
				t.Errorf("Copy changed its source (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(before, testutil.ReadTree(t, dst)); diff != "" {
				t.Errorf("the copy differs from its source (-src +dst):\n%s", diff)
			}
			noTempLeft(t, lfs.Dir)
			if typ == "btrfs" && !isSubvolumeAt(t, dst) {
				t.Errorf("the snapshot %s is not a subvolume", dst)
			}

			// Each is then changed on its own.
			srcTree := testutil.ReadTree(t, src)
			changeTree(t, dst)
			if diff := cmp.Diff(srcTree, testutil.ReadTree(t, src)); diff != "" {
				t.Errorf("changing the copy changed the source (-before +after):\n%s", diff)
			}
			dstTree := testutil.ReadTree(t, dst)
			changeTree(t, src)
			if diff := cmp.Diff(dstTree, testutil.ReadTree(t, dst)); diff != "" {
				t.Errorf("changing the source changed the copy (-before +after):\n%s", diff)
			}
			// A hard link in the copy is still one: a write through one
			// name shows through the other.
			if err := os.WriteFile(filepath.Join(dst, "fs/usr/bin/sudo"), []byte("changed"), 0); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(dst, "fs/usr/bin/su")); string(got) != "changed" {
				t.Errorf("su and sudo are no longer one file in the copy: su reads %q", got)
			}
		})
	}
}

// symlinkAtimesOff is tree without the atimes of its symlinks: a copy
// reads each symlink, which updates its atime (under relatime, when older
// than a day or than its mtime) whatever the flags. The copy has the
// atime from before.
func symlinkAtimesOff(tree map[string]testutil.TreeNode) map[string]testutil.TreeNode {
	out := make(map[string]testutil.TreeNode, len(tree))
	for k, n := range tree {
		if n.Type == testutil.TypeSymlink {
			n.Atime = 0
		}
		out[k] = n
	}
	return out
}

// changeTree writes, extends, renames, removes and re-owns in the tree
// at root.
func changeTree(t *testing.T, root string) {
	t.Helper()
	p := func(rel string) string { return filepath.Join(root, rel) }
	f, err := os.OpenFile(p("fs/hello.txt"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("more\n")
	f.Close()
	f, err = os.OpenFile(p("fs/sparse.img"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("a new beginning"), 0)
	f.Close()
	for _, err := range []error{
		os.Remove(p("fs/etc/gone.conf")),
		os.Rename(p("fs/home/user/a"), p("fs/home/user/c")),
		os.Lchown(p("fs/home/user/dangling"), 2000, 2000),
		os.Chmod(p("fs/usr/bin/su"), 0o755),
		unix.Lsetxattr(p("fs/opaque"), "user.overlay.opaque", []byte("x"), 0),
		os.WriteFile(p("fs/new"), []byte("new"), 0o644),
		os.Mkdir(p("fs/etc/empty.d/sub"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// noTempLeft fails t when a Copy left a temporary entry in dir.
func noTempLeft(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("a temporary copy is left: %s", filepath.Join(dir, e.Name()))
		}
	}
}

func isSubvolumeAt(t *testing.T, dir string) bool {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sub, err := isSubvolume(fd)
	if err != nil {
		t.Fatal(err)
	}
	if sub != (exec.Command("btrfs", "subvolume", "show", dir).Run() == nil) {
		t.Errorf("isSubvolume(%s) = %v; btrfs subvolume show disagrees", dir, sub)
	}
	return sub
}

// TestCopyPlainDirOnBtrfs: a directory on btrfs that is not a subvolume
// cannot be snapshotted; Copy reflinks its files and says so.
func TestCopyPlainDirOnBtrfs(t *testing.T) {
	t.Parallel()
	lfs, b := backendOn(t, "btrfs", 0)
	src, dst := filepath.Join(lfs.Dir, "plain"), filepath.Join(lfs.Dir, "copy")
	if err := os.Mkdir(src, 0o700); err != nil {
		t.Fatal(err)
	}
	testutil.MakeTree(t, src, layerTree())
	before := testutil.ReadTree(t, src)
	stats, err := b.Copy(context.Background(), src, dst)
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if stats.Method != SnapshotReflink || stats.ByteCopied != 0 {
		t.Errorf("Copy of a plain directory on btrfs: %+v, want every file reflinked", stats)
	}
	if diff := cmp.Diff(before, testutil.ReadTree(t, dst)); diff != "" {
		t.Errorf("the copy differs from its source (-src +dst):\n%s", diff)
	}
	if isSubvolumeAt(t, dst) {
		t.Errorf("a reflink copy %s is a subvolume", dst)
	}
}

// TestCopyFailsClean: a Copy that cannot finish leaves nothing at dst nor
// beside it, and one onto an existing name changes nothing there.
func TestCopyFailsClean(t *testing.T) {
	for _, typ := range filesystems {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			lfs, b := backendOn(t, typ, 0)
			src := filepath.Join(lfs.Dir, "upper")
			if err := b.Make(src); err != nil {
				t.Fatal(err)
			}
			testutil.MakeTree(t, src, layerTree()[:6])

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			dst := filepath.Join(lfs.Dir, "cancelled")
			if _, err := b.Copy(ctx, src, dst); !errors.Is(err, context.Canceled) {
				t.Errorf("Copy with a cancelled context: %v, want context.Canceled", err)
			}
			if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a cancelled Copy left %s: %v", dst, err)
			}
			noTempLeft(t, lfs.Dir)

			// A file the copy cannot read: the walk fails half way
			// (a plain directory, so btrfs walks it too).
			plain := filepath.Join(lfs.Dir, "plain")
			if err := os.Mkdir(plain, 0o755); err != nil {
				t.Fatal(err)
			}
			testutil.MakeTree(t, plain, layerTree()[:8]) // fs/empty is mode 0
			var copyErr error
			withoutDACOverride(t, func() { _, copyErr = b.Copy(context.Background(), plain, dst) })
			if !errors.Is(copyErr, unix.EACCES) {
				t.Errorf("Copy of a tree with a file it cannot read: %v, want EACCES", copyErr)
			}
			t.Logf("Copy of a tree with a file it cannot read: %v", copyErr)
			if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed Copy left %s: %v", dst, err)
			}
			noTempLeft(t, lfs.Dir)

			taken := filepath.Join(lfs.Dir, "taken")
			if err := os.Mkdir(taken, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Copy(context.Background(), src, taken); !errors.Is(err, fs.ErrExist) {
				t.Errorf("Copy onto an existing directory: %v, want ErrExist", err)
			}
			if entries, _ := os.ReadDir(taken); len(entries) != 0 {
				t.Errorf("Copy onto an existing directory wrote into it")
			}
			noTempLeft(t, lfs.Dir)
		})
	}
}

// withoutDACOverride runs f on a thread of its own without
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so that root obeys file modes
// there. The thread ends with f: it is never unlocked.
func withoutDACOverride(t *testing.T, f func()) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		for _, c := range []int{unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH} {
			data[c/32].Effective &^= 1 << (c % 32)
		}
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			done <- err
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("dropping CAP_DAC_OVERRIDE: %v", err)
	}
}

func TestMake(t *testing.T) {
	for _, typ := range filesystems {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			lfs, b := backendOn(t, typ, 0)
			dir := filepath.Join(lfs.Dir, "layer")
			old := unix.Umask(0o077) // Make's mode does not depend on it
			err := b.Make(dir)
			unix.Umask(old)
			if err != nil {
				t.Fatalf("Make: %v", err)
			}
			var st unix.Stat_t
			if err := unix.Lstat(dir, &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode != unix.S_IFDIR|0o700 || st.Uid != uint32(os.Geteuid()) || st.Gid != uint32(os.Getegid()) {
				t.Errorf("Make made mode %#o, owner %d:%d; want a directory 0700 of %d:%d", st.Mode, st.Uid, st.Gid, os.Geteuid(), os.Getegid())
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
				t.Errorf("Make: %d entries, %v; want an empty directory", len(entries), err)
			}
			if got := isSubvolumeAt(t, dir); got != (typ == "btrfs") {
				t.Errorf("on %s, Make made a subvolume: %v", typ, got)
			}
			if err := b.Make(dir); !errors.Is(err, fs.ErrExist) {
				t.Errorf("Make of an existing directory: %v, want ErrExist", err)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	for _, typ := range filesystems {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			lfs, b := backendOn(t, typ, 0)
			layer := filepath.Join(lfs.Dir, "layer")
			if err := b.Make(layer); err != nil {
				t.Fatal(err)
			}
			testutil.MakeTree(t, layer, layerTree())
			snap := filepath.Join(lfs.Dir, "snap")
			if _, err := b.Copy(context.Background(), layer, snap); err != nil {
				t.Fatal(err)
			}
			// A layer inside a plain directory, as a sandbox's is.
			sandbox := filepath.Join(lfs.Dir, "sandbox")
			if err := os.Mkdir(sandbox, 0o700); err != nil {
				t.Fatal(err)
			}
			inner := filepath.Join(sandbox, "upper")
			if err := b.Make(inner); err != nil {
				t.Fatal(err)
			}
			testutil.MakeTree(t, inner, layerTree()[:10])
			// A layer inside a layer (on btrfs, a subvolume in a
			// subvolume, which BTRFS_IOC_SNAP_DESTROY refuses).
			nested := filepath.Join(layer, "nested")
			if err := b.Make(nested); err != nil {
				t.Fatal(err)
			}
			testutil.MakeTree(t, nested, layerTree()[:10])

			for _, dir := range []string{layer, snap, sandbox} {
				if err := b.Remove(dir); err != nil {
					t.Errorf("Remove(%s): %v", dir, err)
				}
				if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("after Remove(%s): %v", dir, err)
				}
				if err := b.Remove(dir); err != nil {
					t.Errorf("Remove(%s) once gone: %v", dir, err)
				}
			}
			if typ == "btrfs" {
				noSubvolumesLeft(t, lfs.Dir)
			}
		})
	}
}

// TestSetLimitUnsupported: without a quota mechanism SetLimit says so,
// with the code callers look for and what an operator can do.
func TestSetLimitUnsupported(t *testing.T) {
	for _, typ := range filesystems {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			lfs, b := backendOn(t, typ, 0)
			dir := filepath.Join(lfs.Dir, "layer")
			if err := b.Make(dir); err != nil {
				t.Fatal(err)
			}
			err := b.SetLimit(dir, 8<<20)
			if !errdefs.HasCode(err, "quota_unsupported") || !errors.Is(err, errdefs.ErrUnsupported) {
				t.Fatalf("SetLimit: %v, want quota_unsupported", err)
			}
			_, _, msg := errdefs.Classify(err)
			t.Logf("SetLimit on %s: %s", typ, msg)
			if typ == "btrfs" && !strings.Contains(msg, "`btrfs quota enable "+lfs.Dir+"`") {
				t.Errorf("the message %q does not say how to turn qgroups on", msg)
			}
			if err := b.SetLimit(dir, -1); !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("SetLimit(-1): %v, want ErrInvalid", err)
			}
			u, err := b.Usage(context.Background(), dir)
			if err != nil || u.Method != UsageWalk {
				t.Errorf("Usage without quotas: %+v, %v; want a walk", u, err)
			}
		})
	}
}

// TestUsageWalk holds the walk to du -sx: blocks, hard links once, holes
// not counted, another mount not entered.
func TestUsageWalk(t *testing.T) {
	t.Parallel()
	lfs, b := backendOn(t, "ext4", 0)
	dir := filepath.Join(lfs.Dir, "layer")
	if err := b.Make(dir); err != nil {
		t.Fatal(err)
	}
	testutil.MakeTree(t, dir, layerTree())
	testutil.MakeTree(t, dir, []testutil.TreeEntry{
		{Path: "big", Type: testutil.TypeFile, Mode: 0o644, Data: []byte(strings.Repeat("0123456789abcdef", 1<<16))},
		{Path: "big2", Type: testutil.TypeHardlink, Target: "big"},
		{Path: "mnt", Type: testutil.TypeDir, Mode: 0o755},
	})
	mnt := filepath.Join(dir, "mnt")
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=8m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, mnt) })
	if err := os.WriteFile(filepath.Join(mnt, "elsewhere"), make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := b.Usage(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Fields(run(t, "du", "-s", "-x", "-B1", dir))
	if u.Method != UsageWalk || out[0] != strconvI(u.Bytes) {
		t.Errorf("Usage = %+v; du -sx says %s bytes", u, out[0])
	}
	if u.Bytes < 1<<20 || u.Bytes > 2<<20 {
		t.Errorf("Usage = %d bytes for 1 MiB of data, a hard link and holes", u.Bytes)
	}
}

func strconvI(n int64) string { return strconv.FormatInt(n, 10) }

// TestCopyMountInside: a mount under src is not crossed; its mount point
// is copied as an empty directory and counted.
func TestCopyMountInside(t *testing.T) {
	t.Parallel()
	lfs, b := backendOn(t, "ext4", 0)
	src, dst := filepath.Join(lfs.Dir, "layer"), filepath.Join(lfs.Dir, "copy")
	if err := b.Make(src); err != nil {
		t.Fatal(err)
	}
	testutil.MakeTree(t, src, layerTree()[:3])
	mnt := filepath.Join(src, "fs", "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, mnt) })
	if err := os.WriteFile(filepath.Join(mnt, "elsewhere"), []byte("not copied"), 0o600); err != nil {
		t.Fatal(err)
	}
	stats, err := b.Copy(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Mounts != 1 {
		t.Errorf("Copy counted %d mounts, want 1", stats.Mounts)
	}
	entries, err := os.ReadDir(filepath.Join(dst, "fs", "mnt"))
	if err != nil || len(entries) != 0 {
		t.Errorf("the copy of the mount point: %d entries, %v; want an empty directory", len(entries), err)
	}
}

func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		info   Info
		kind   Kind
		method Snapshot
	}{
		{Info{Kind: Btrfs, Reflink: true, Snapshot: SnapshotSubvolume}, Btrfs, SnapshotSubvolume},
		{Info{Kind: XFS, Reflink: true, Snapshot: SnapshotReflink}, XFS, SnapshotReflink},
		{Info{Kind: Overlay, Reflink: true, Snapshot: SnapshotReflink}, Overlay, SnapshotReflink},
		{Info{Kind: Overlay, Snapshot: SnapshotCopy}, Overlay, SnapshotCopy},
		{Info{Kind: None, Snapshot: SnapshotCopy}, None, SnapshotCopy},
	} {
		b := Open(tc.info)
		if b.Kind() != tc.kind {
			t.Errorf("Open(%+v).Kind() = %q, want %q", plain(tc.info), b.Kind(), tc.kind)
		}
		switch b := b.(type) {
		case *btrfsBackend:
			if tc.method != SnapshotSubvolume {
				t.Errorf("Open(%+v) is the btrfs backend", plain(tc.info))
			}
		case *dirBackend:
			if b.method != tc.method {
				t.Errorf("Open(%+v) copies by %q, want %q", plain(tc.info), b.method, tc.method)
			}
		}
	}
}
