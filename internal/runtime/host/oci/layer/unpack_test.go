package layer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// TestUnpack: a layer lands whole under its name or not at all, and two
// unpacks of one name race safely.
func TestUnpack(t *testing.T) {
	base := t.TempDir()
	good := tarOf(t, dir("d", 0o555), file("d/f", "x", 0o444), whiteout("d/.wh.gone"))
	bad := tarOf(t, dir("d", 0o555), file("d/f", "x", 0o444), file("../escape", "x", 0o644))
	ctx := context.Background()

	dst := filepath.Join(base, "sha256-bad")
	_, err := layer.Unpack(ctx, dst, bytes.NewReader(bad), layer.Options{Mode: layer.Layer})
	wantCode(t, "bad layer", err, layer.CodePathEscapes)
	onlyIn(t, base)

	dst = filepath.Join(base, "sha256-good")
	st, err := layer.Unpack(ctx, dst, bytes.NewReader(good), layer.Options{Mode: layer.Layer})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 1 || len(st.Whiteouts) != 1 {
		t.Errorf("stats: %+v", st)
	}
	if got := lstatMode(t, dst); got != 0o755 {
		t.Errorf("the layer's directory has mode %04o", got)
	}
	if got := describe(t, filepath.Join(dst, "d/gone")); got != "char 0/0" {
		t.Errorf("d/gone is %s", got)
	}
	onlyIn(t, base, "sha256-good")

	_, err = layer.Unpack(ctx, dst, bytes.NewReader(good), layer.Options{Mode: layer.Layer})
	wantCode(t, "again", err, layer.CodeExists)
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("not a conflict: %v", err)
	}

	// Racing unpacks of one layer: one wins, the others say it exists,
	// and no partial copy stays.
	race := filepath.Join(base, "sha256-race")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = layer.Unpack(ctx, race, bytes.NewReader(good), layer.Options{Mode: layer.Layer})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errdefs.HasCode(err, layer.CodeExists):
			t.Errorf("racing unpack: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d racing unpacks won", won)
	}
	onlyIn(t, base, "sha256-good", "sha256-race")

	// RemoveAll takes a layer apart, read-only directories and all.
	for _, p := range []string{dst, race} {
		if err := layer.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	onlyIn(t, base)
}

// TestUnpackCancelled: a cancelled unpack leaves nothing.
func TestUnpackCancelled(t *testing.T) {
	base := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := layer.Unpack(ctx, filepath.Join(base, "l"), bytes.NewReader(tarOf(t, file("f", "x", 0o644))), layer.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	onlyIn(t, base)
}

// TestReadOnlyDirsBelow: a layer writes and deletes in a directory an
// earlier layer made read-only, which an unprivileged caller cannot
// without bending the mode; the mode comes back.
func TestReadOnlyDirsBelow(t *testing.T) {
	f := newFixture(t)
	f.mustApply(t, layer.Options{}, dir("ro", 0o555), dir("ro/sub", 0o500), file("ro/sub/f", "f", 0o444), file("ro/g", "g", 0o400), dir("ro/x", 0o555), file("ro/x/y", "y", 0o644))
	f.mustApply(t, layer.Options{}, file("ro/new", "n", 0o644), whiteout("ro/.wh.sub"), whiteout("ro/.wh.g"), file("ro/x/z", "z", 0o644), whiteout("ro/x/.wh.y"))
	want := map[string]string{"ro": "dir 0555", "ro/new": `file 0644 "n"`, "ro/x": "dir 0555", "ro/x/z": `file 0644 "z"`}
	got := tree(t, f.root)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s is %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tree: %v", got)
	}
	f.mustApply(t, layer.Options{}, whiteout(".wh..wh..opq"))
	if got := tree(t, f.root); len(got) != 0 {
		t.Errorf("after an opaque root: %v", got)
	}
}

// TestOwnership: without Owner, files are the caller's whatever the layer
// says; with it, the mapped ids, and an id outside the map is refused.
func TestOwnership(t *testing.T) {
	owned := func(e ent, uid, gid int) ent { e.hdr.Uid, e.hdr.Gid = uid, gid; return e }
	ents := []ent{owned(dir("home", 0o755), 0, 0), owned(dir("home/u", 0o700), 1000, 1000), owned(file("home/u/f", "x", 0o600), 1000, 100), owned(symlink("home/u/l", "f"), 1000, 1000), file("implicit/f", "", 0o644)}
	f := newFixture(t)
	f.mustApply(t, layer.Options{}, ents...)
	for _, p := range []string{"home", "home/u", "home/u/f", "home/u/l", "implicit"} {
		if uid, gid := owner(t, filepath.Join(f.root, p)); uid != os.Geteuid() || gid != os.Getegid() {
			t.Errorf("%s is owned by %d:%d, not the caller", p, uid, gid)
		}
	}
	needRoot(t, "gives files to other users")
	g := newFixture(t)
	g.mustApply(t, layer.Options{Owner: layer.Shift(100000, 200000, 65536)}, ents...)
	want := map[string][2]int{"home": {100000, 200000}, "home/u": {101000, 201000}, "home/u/f": {101000, 200100}, "home/u/l": {101000, 201000}, "implicit": {100000, 200000}}
	for p, w := range want {
		if uid, gid := owner(t, filepath.Join(g.root, p)); uid != w[0] || gid != w[1] {
			t.Errorf("%s is owned by %d:%d, want %d:%d", p, uid, gid, w[0], w[1])
		}
	}
	_, err := g.apply(t, layer.Options{Owner: layer.Shift(100000, 100000, 65536)}, owned(file("x", "", 0o644), 70000, 0))
	wantCode(t, "unmapped id", err, layer.CodeOwner)
}

func owner(t *testing.T, p string) (int, int) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid), int(st.Gid)
}

// onlyIn fails unless dir holds exactly names.
func onlyIn(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("%s holds %v, want %v", dir, got, names)
	}
	for i := range got {
		if got[i] != names[i] {
			t.Fatalf("%s holds %v, want %v", dir, got, names)
		}
	}
}
