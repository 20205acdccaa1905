package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/testutil"
)

// TestCopyOverlayLayer copies a writable layer that a real overlay wrote
// (whiteouts the kernel made, an opaque directory, user.overlay.* xattrs
// as hutch mounts with userxattr) and mounts an overlay on the copy: it
// shows the same files as one on the original.
func TestCopyOverlayLayer(t *testing.T) {
	for _, typ := range filesystems {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			lfs, b := backendOn(t, typ, 0)
			dir := func(rel string) string { return filepath.Join(lfs.Dir, rel) }
			if err := os.Mkdir(dir("lower"), 0o755); err != nil {
				t.Fatal(err)
			}
			testutil.MakeTree(t, dir("lower"), []testutil.TreeEntry{
				{Path: "gone", Type: testutil.TypeFile, Mode: 0o644, Data: []byte("lower")},
				{Path: "gone-too", Type: testutil.TypeFile, Mode: 0o644, Data: []byte("lower")},
				{Path: "redone", Type: testutil.TypeDir, Mode: 0o755},
				{Path: "redone/old", Type: testutil.TypeFile, Mode: 0o644, Data: []byte("lower")},
				{Path: "kept", Type: testutil.TypeDir, Mode: 0o755},
				{Path: "kept/file", Type: testutil.TypeFile, Mode: 0o644, UID: 1000, Data: []byte("lower")},
			})
			if err := b.Make(dir("upper")); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{"upper/fs", "upper/work", "merged"} {
				if err := os.Mkdir(dir(d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			mountOverlay(t, dir("lower"), dir("upper"), dir("merged"))
			m := func(rel string) string { return filepath.Join(dir("merged"), rel) }
			for _, err := range []error{
				os.Remove(m("gone")),
				os.Remove(m("gone-too")),
				os.RemoveAll(m("redone")),
				os.Mkdir(m("redone"), 0o700),
				os.WriteFile(m("redone/new"), []byte("upper"), 0o600),
				os.Chmod(m("kept/file"), 0o4755),
				os.WriteFile(m("kept/added"), []byte("upper"), 0o640),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			want := testutil.ReadTree(t, dir("merged"))
			unmount(t, dir("merged"))

			upper := testutil.ReadTree(t, dir("upper"))
			if n := upper["fs/gone"]; n.Type != testutil.TypeChar || n.Rdev != "0:0" {
				t.Errorf("the overlay made no whiteout for gone: %+v", n)
			}
			if n := upper["fs/redone"]; n.Xattrs["user.overlay.opaque"] != "y" {
				t.Errorf("the overlay made no opaque directory: %+v", n)
			}
			t.Logf("whiteouts: gone %+v, gone-too %+v", upper["fs/gone"], upper["fs/gone-too"])

			if _, err := b.Copy(context.Background(), dir("upper"), dir("copy")); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(upper, testutil.ReadTree(t, dir("copy"))); diff != "" {
				t.Errorf("the copy differs from the layer (-layer +copy):\n%s", diff)
			}
			mountOverlay(t, dir("lower"), dir("copy"), dir("merged"))
			got := testutil.ReadTree(t, dir("merged"))
			unmount(t, dir("merged"))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("an overlay on the copy differs from one on the layer (-layer +copy):\n%s", diff)
			}
		})
	}
}

// mountOverlay mounts on merged an overlay of lower under layer/fs (with
// layer/work), with user.overlay.* xattrs, as hutch's sandboxes do.
func mountOverlay(t *testing.T, lower, layer, merged string) {
	t.Helper()
	opts := "userxattr,lowerdir=" + lower + ",upperdir=" + filepath.Join(layer, "fs") + ",workdir=" + filepath.Join(layer, "work")
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Fatalf("mount -t overlay -o %s: %v", opts, err)
	}
	// The test unmounts it; this is for when it fails first.
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
}
