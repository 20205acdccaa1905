package layer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// threeLayers is an image whose later layers delete, hide and recreate
// what the earlier ones made, every way a builder does.
func threeLayers() [][]ent {
	return [][]ent{
		{
			dir("etc", 0o755), file("etc/a", "a", 0o644), file("etc/b", "b", 0o600),
			file("gone", "g", 0o644),
			dir("gonedir", 0o755), dir("gonedir/sub", 0o700), file("gonedir/sub/f", "f", 0o644),
			dir("opt", 0o755), file("opt/x", "x", 0o644), dir("opt/sub", 0o755), file("opt/sub/y", "y", 0o644),
			dir("var", 0o755), file("var/old", "old", 0o644),
			dir("srv", 0o755), dir("srv/a", 0o750), file("srv/a/old", "old", 0o644), file("srv/b", "b", 0o644),
			dir("keep", 0o755), file("keep/k", "k", 0o644),
			symlink("lnk", "etc"),
			dir("tmp", 0o1777),
		},
		{
			// whiteouts first, as builders write them
			whiteout("etc/.wh.a"), whiteout(".wh.gone"), whiteout(".wh.gonedir"), whiteout(".wh.lnk"),
			// opaque marker before the directory's entries…
			dir("opt", 0o755), whiteout("opt/.wh..wh..opq"), file("opt/new", "n", 0o644), dir("opt/sub", 0o711),
			// …and after them
			dir("var", 0o755), file("var/new", "new", 0o644), whiteout("var/.wh..wh..opq"),
			// a marker above entries whose directories the layer leaves
			// undescribed (srv/a): they keep the lower layer's mode
			file("srv/a/new", "new", 0o644), whiteout("srv/.wh..wh..opq"),
			dir("keep", 0o700), file("keep/k2", "k2", 0o644),
			file("tmp/t", "t", 0o644),
		},
		{
			// deleted, then made again in the same layer
			whiteout(".wh.opt"), dir("opt", 0o750), file("opt/z", "z", 0o644),
			whiteout("etc/.wh.b"), file("etc/b", "b2", 0o644),
			symlink("lnk", "keep"),
		},
	}
}

// wantImage is what threeLayers gives.
var wantImage = map[string]string{
	"etc":       "dir 0755",
	"etc/b":     `file 0644 "b2"`,
	"opt":       "dir 0750",
	"opt/z":     `file 0644 "z"`,
	"var":       "dir 0755",
	"var/new":   `file 0644 "new"`,
	"srv":       "dir 0755",
	"srv/a":     "dir 0750",
	"srv/a/new": `file 0644 "new"`,
	"keep":      "dir 0700",
	"keep/k":    `file 0644 "k"`,
	"keep/k2":   `file 0644 "k2"`,
	"lnk":       "symlink -> keep",
	"tmp":       "dir 1777",
	"tmp/t":     `file 0644 "t"`,
}

// TestFlattenImage applies three layers onto one directory.
func TestFlattenImage(t *testing.T) {
	f := newFixture(t)
	var stats []layer.Stats
	for _, l := range threeLayers() {
		stats = append(stats, f.mustApply(t, layer.Options{}, l...))
	}
	if d := cmp.Diff(wantImage, tree(t, f.root)); d != "" {
		t.Errorf("image (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"etc/a", "gone", "gonedir", "lnk"}, stats[1].Whiteouts); d != "" {
		t.Errorf("layer 2's whiteouts (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"opt", "var", "srv"}, stats[1].Opaque); d != "" {
		t.Errorf("layer 2's opaque directories (-want +got):\n%s", d)
	}
}

// TestLayerRecordsWhiteouts unpacks one layer alone: whiteouts are 0/0
// character devices and opaque directories carry user.overlay.opaque.
func TestLayerRecordsWhiteouts(t *testing.T) {
	f := newFixture(t)
	st := f.mustApply(t, layer.Options{Mode: layer.Layer}, threeLayers()[1]...)
	want := map[string]string{
		"etc": "dir 0755", "etc/a": "char 0/0", "gone": "char 0/0", "gonedir": "char 0/0", "lnk": "char 0/0",
		"opt": "dir 0755", "opt/new": `file 0644 "n"`, "opt/sub": "dir 0711",
		"var": "dir 0755", "var/new": `file 0644 "new"`,
		"srv": "dir 0755", "srv/a": "dir 0755", "srv/a/new": `file 0644 "new"`,
		"keep": "dir 0700", "keep/k2": `file 0644 "k2"`,
		"tmp": "dir 0755", "tmp/t": `file 0644 "t"`,
	}
	if d := cmp.Diff(want, tree(t, f.root)); d != "" {
		t.Errorf("layer (-want +got):\n%s", d)
	}
	for _, p := range []string{"opt", "var", "srv"} {
		if !opaque(t, filepath.Join(f.root, p)) {
			t.Errorf("%s is not marked opaque", p)
		}
	}
	for _, p := range []string{"etc", "keep", "srv/a"} {
		if opaque(t, filepath.Join(f.root, p)) {
			t.Errorf("%s is marked opaque", p)
		}
	}
	if d := cmp.Diff([]string{"etc/a", "gone", "gonedir", "lnk"}, st.Whiteouts); d != "" {
		t.Errorf("whiteouts (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"opt", "var", "srv"}, st.Opaque); d != "" {
		t.Errorf("opaque (-want +got):\n%s", d)
	}
	// Deleted and made again in one layer: opaque, so nothing below shows.
	g := newFixture(t)
	g.mustApply(t, layer.Options{Mode: layer.Layer}, threeLayers()[2]...)
	if !opaque(t, filepath.Join(g.root, "opt")) {
		t.Error("opt, whited out then made again, is not opaque")
	}
}

// TestOverlayMatchesFlatten mounts the layers unpacked one by one as an
// overlay, the way a sandbox's root is mounted, and finds the image
// TestFlattenImage finds.
func TestOverlayMatchesFlatten(t *testing.T) {
	needRoot(t, "mounts an overlay")
	base := t.TempDir()
	var lowers []string
	for i, l := range threeLayers() {
		dst := filepath.Join(base, "l"+string(rune('1'+i)))
		_, err := layer.Unpack(context.Background(), dst, bytes.NewReader(tarOf(t, l...)), layer.Options{Mode: layer.Layer, Lower: lowers})
		if err != nil {
			t.Fatalf("layer %d: %v", i+1, err)
		}
		lowers = append([]string{dst}, lowers...)
	}
	merged := filepath.Join(base, "merged")
	if err := os.Mkdir(merged, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "lowerdir=" + lowers[0] + ":" + lowers[1] + ":" + lowers[2] + ",userxattr"
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_RDONLY, opts); err != nil {
		t.Skipf("cannot mount an overlay here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
	if d := cmp.Diff(wantImage, tree(t, merged)); d != "" {
		t.Errorf("overlay of the layers (-want +got):\n%s", d)
	}
}

// TestLowerGivesImplicitDirs: a directory the layer needs but does not
// describe takes what the layers below give it, and stops at a whiteout.
func TestLowerGivesImplicitDirs(t *testing.T) {
	base := t.TempDir()
	unpack := func(name string, lower []string, ents ...ent) string {
		dst := filepath.Join(base, name)
		if _, err := layer.Unpack(context.Background(), dst, bytes.NewReader(tarOf(t, ents...)), layer.Options{Mode: layer.Layer, Lower: lower}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return dst
	}
	l1 := unpack("l1", nil, dir("tmp", 0o1777), dir("a", 0o750), dir("a/b", 0o700), dir("w", 0o711), dir("o", 0o751), dir("o/p", 0o701))
	l2 := unpack("l2", []string{l1}, whiteout(".wh.w"), whiteout("o/.wh..wh..opq"))
	l3 := unpack("l3", []string{l2, l1}, file("tmp/f", "", 0o644), file("a/b/c/f", "", 0o644), file("w/f", "", 0o644), file("o/p/f", "", 0o644))
	want := map[string]string{
		"tmp": "dir 1777", "tmp/f": `file 0644 ""`,
		"a": "dir 0750", "a/b": "dir 0700", "a/b/c": "dir 0755", "a/b/c/f": `file 0644 ""`,
		"w": "dir 0755", "w/f": `file 0644 ""`, // whited out below
		"o": "dir 0751", "o/p": "dir 0755", "o/p/f": `file 0644 ""`, // o is opaque in l2
	}
	if d := cmp.Diff(want, tree(t, l3)); d != "" {
		t.Errorf("implicit directories (-want +got):\n%s", d)
	}
	if err := layer.RemoveAll(base); err != nil {
		t.Fatal(err)
	}
}

func opaque(t *testing.T, p string) bool {
	t.Helper()
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(p, "user.overlay.opaque", buf)
	return err == nil && string(buf[:n]) == "y"
}
