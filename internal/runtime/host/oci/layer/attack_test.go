package layer_test

import (
	"archive/tar"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// TestHostileLayers: each layer tries to change something outside the
// root. The fixture checks that nothing outside changed; each case says
// whether the layer is refused (and why) or lands inside the root.
func TestHostileLayers(t *testing.T) {
	hostEtc := hashFile(t, "/etc/passwd")
	marker := "hutch-layer-test-" + filepath.Base(t.TempDir())
	t.Cleanup(func() {
		if got := hashFile(t, "/etc/passwd"); got != hostEtc {
			t.Error("the host's /etc/passwd changed")
		}
		absent(t, filepath.Join("/etc", marker))
		absent(t, filepath.Join("/", marker))
	})
	type check func(t *testing.T, f *fixture)
	cases := []struct {
		name  string
		ents  func(f *fixture) []ent
		code  string // "" when the layer applies
		check check
		only  *layer.Mode // the one mode the case is for; nil: both
	}{
		{
			name: "dotdot",
			ents: func(f *fixture) []ent { return []ent{file("../outside/canary", "pwned", 0o644)} },
			code: layer.CodePathEscapes,
		},
		{
			name: "dotdot_inside",
			ents: func(f *fixture) []ent { return []ent{dir("a", 0o755), file("a/../../outside/canary", "pwned", 0o644)} },
			code: layer.CodePathEscapes,
		},
		{
			name: "dotdot_dir",
			ents: func(f *fixture) []ent { return []ent{dir("../outside/dir/new", 0o755)} },
			code: layer.CodePathEscapes,
		},
		{
			// An absolute name is relative to the root, as tar takes it.
			name: "absolute",
			ents: func(f *fixture) []ent {
				return []ent{file(f.canary, "inside", 0o644), file("/"+marker, "inside", 0o644)}
			},
			check: func(t *testing.T, f *fixture) {
				if got := readFile(t, filepath.Join(f.root, f.canary)); got != "inside" {
					t.Errorf("the absolute name landed as %q", got)
				}
				if got := readFile(t, filepath.Join(f.root, marker)); got != "inside" {
					t.Errorf("/%s landed as %q", marker, got)
				}
			},
		},
		{
			// a -> /etc, then a/passwd: /etc is the root's, which has none.
			name: "symlink_to_etc_then_file",
			ents: func(f *fixture) []ent {
				return []ent{symlink("a", "/etc"), file("a/passwd", "pwned", 0o644), file("a/"+marker, "pwned", 0o644)}
			},
			code: layer.CodeNotADirectory,
		},
		{
			// The same with an etc in the root: the file lands there.
			name: "symlink_to_etc_in_root",
			ents: func(f *fixture) []ent {
				return []ent{dir("etc", 0o755), symlink("a", "/etc"), file("a/passwd", "inside", 0o644), file("a/"+marker, "inside", 0o644)}
			},
			check: func(t *testing.T, f *fixture) {
				if got := readFile(t, filepath.Join(f.root, "etc/passwd")); got != "inside" {
					t.Errorf("root's etc/passwd is %q", got)
				}
			},
		},
		{
			name: "symlink_to_outside_dir_then_file",
			ents: func(f *fixture) []ent {
				return []ent{symlink("a", f.outside), file("a/canary", "pwned", 0o644), file("a/dir/keep", "pwned", 0o644)}
			},
			code: layer.CodeNotADirectory,
		},
		{
			// a -> ../../../.. stops at the root; what follows is made there.
			name: "symlink_up_then_file",
			ents: func(f *fixture) []ent {
				rel := strings.TrimPrefix(f.canary, "/")
				return []ent{symlink("a", "../../../../../../.."), file("a/"+rel, "inside", 0o644)}
			},
			check: func(t *testing.T, f *fixture) {
				if got := readFile(t, filepath.Join(f.root, f.canary)); got != "inside" {
					t.Errorf("the file through a -> ../.. landed as %q", got)
				}
			},
		},
		{
			name: "symlink_chain_then_dir",
			ents: func(f *fixture) []ent {
				return []ent{symlink("a", "b"), symlink("b", f.outside+"/dir"), dir("a/new", 0o755)}
			},
			code: layer.CodeNotADirectory,
		},
		{
			name: "symlink_loop",
			ents: func(f *fixture) []ent { return []ent{symlink("a", "b"), symlink("b", "a"), file("a/x", "x", 0o644)} },
			code: layer.CodeNotADirectory,
		},
		{
			// /proc's magic links are refused, and the root has no /proc.
			name: "symlink_to_proc_root",
			ents: func(f *fixture) []ent {
				rel := strings.TrimPrefix(f.canary, "/")
				return []ent{symlink("p", "/proc/self/root"), file("p/"+rel, "pwned", 0o644)}
			},
			code: layer.CodeNotADirectory,
		},
		{
			// A file written where a symlink to outside stands replaces
			// the symlink: it is never opened through it.
			name: "file_over_symlink",
			ents: func(f *fixture) []ent {
				return []ent{symlink("evil", f.canary), file("evil", "inside", 0o644)}
			},
			check: func(t *testing.T, f *fixture) {
				if got := describe(t, filepath.Join(f.root, "evil")); got != `file 0644 "inside"` {
					t.Errorf("evil is %s", got)
				}
			},
		},
		{
			name: "dir_over_symlink",
			ents: func(f *fixture) []ent {
				return []ent{symlink("d", f.outside+"/dir"), dir("d", 0o777), file("d/keep", "inside", 0o644)}
			},
			check: func(t *testing.T, f *fixture) {
				if got := describe(t, filepath.Join(f.root, "d")); got != "dir 0777" {
					t.Errorf("d is %s", got)
				}
			},
		},
		{
			name: "hardlink_dotdot",
			ents: func(f *fixture) []ent { return []ent{hardlink("h", "../outside/canary")} },
			code: layer.CodePathEscapes,
		},
		{
			name: "hardlink_absolute_host_path",
			ents: func(f *fixture) []ent { return []ent{hardlink("h", f.canary)} },
			code: layer.CodeHardlinkInvalid,
		},
		{
			name: "hardlink_through_symlink",
			ents: func(f *fixture) []ent { return []ent{symlink("s", f.outside), hardlink("h", "s/canary")} },
			code: layer.CodeHardlinkInvalid,
		},
		{
			name: "hardlink_through_symlink_to_etc",
			ents: func(f *fixture) []ent { return []ent{symlink("s", "/etc"), hardlink("h", "s/passwd")} },
			code: layer.CodeHardlinkInvalid,
		},
		{
			name: "hardlink_to_dir",
			ents: func(f *fixture) []ent { return []ent{dir("d", 0o755), hardlink("h", "d")} },
			code: layer.CodeHardlinkInvalid,
		},
		{
			name: "hardlink_to_root",
			ents: func(f *fixture) []ent { return []ent{hardlink("h", "/")} },
			code: layer.CodeHardlinkInvalid,
		},
		{
			// A file written over a hard link replaces the name; the
			// other name keeps its content.
			name: "file_over_hardlink",
			ents: func(f *fixture) []ent {
				return []ent{file("f", "first", 0o644), hardlink("h", "f"), file("h", "second", 0o644)}
			},
			check: func(t *testing.T, f *fixture) {
				if got := readFile(t, filepath.Join(f.root, "f")); got != "first" {
					t.Errorf("f is %q after h was rewritten", got)
				}
			},
		},
		{
			name: "whiteout_dotdot",
			ents: func(f *fixture) []ent { return []ent{whiteout(".wh...")} },
			code: layer.CodeInvalidWhiteout,
		},
		{
			name: "whiteout_dot",
			ents: func(f *fixture) []ent { return []ent{whiteout("a/.wh..")} },
			code: layer.CodeInvalidWhiteout,
		},
		{
			name: "whiteout_empty",
			ents: func(f *fixture) []ent { return []ent{whiteout(".wh.")} },
			code: layer.CodeInvalidWhiteout,
		},
		{
			name: "whiteout_dotdot_path",
			ents: func(f *fixture) []ent { return []ent{whiteout("../outside/.wh.canary")} },
			code: layer.CodePathEscapes,
		},
		{
			name: "whiteout_inside_path",
			ents: func(f *fixture) []ent { return []ent{file(".wh.../outside/canary", "x", 0o644)} },
			code: layer.CodeInvalidWhiteout,
		},
		{
			// A whiteout through a symlink to outside finds nothing in
			// the root to delete.
			name: "whiteout_through_symlink",
			ents: func(f *fixture) []ent {
				return []ent{symlink("a", f.outside), whiteout("a/.wh.canary"), whiteout("a/.wh.dir")}
			},
			only: &flatten,
		},
		{
			// In a layer of its own, the whiteout has nowhere to go.
			name: "whiteout_through_symlink",
			ents: func(f *fixture) []ent {
				return []ent{symlink("a", f.outside), whiteout("a/.wh.canary"), whiteout("a/.wh.dir")}
			},
			code: layer.CodeNotADirectory,
			only: &own,
		},
		{
			name: "whiteout_of_symlink_to_outside",
			ents: func(f *fixture) []ent {
				return []ent{symlink("a", f.outside+"/dir"), whiteout(".wh.a")}
			},
			check: func(t *testing.T, f *fixture) {
				if f.mode == layer.Flatten {
					absent(t, filepath.Join(f.root, "a"))
				} else if got := describe(t, filepath.Join(f.root, "a")); got != "char 0/0" {
					t.Errorf("a is %s, not a whiteout", got)
				}
			},
		},
		{
			// The opaque marker under a symlink makes a directory of the
			// layer's; the symlink's target is left alone.
			name: "opaque_through_symlink",
			ents: func(f *fixture) []ent {
				return []ent{symlink("a", f.outside+"/dir"), whiteout("a/.wh..wh..opq")}
			},
			check: func(t *testing.T, f *fixture) {
				if got := describe(t, filepath.Join(f.root, "a")); got != "dir 0755" {
					t.Errorf("a is %s", got)
				}
			},
		},
		{
			name: "opaque_of_root",
			ents: func(f *fixture) []ent { return []ent{file("x", "x", 0o644), whiteout(".wh..wh..opq")} },
			check: func(t *testing.T, f *fixture) {
				if got := tree(t, f.root); len(got) != 1 || got["x"] == "" {
					t.Errorf("root after an opaque marker at its top: %v", got)
				}
			},
		},
		{
			name: "file_named_root",
			ents: func(f *fixture) []ent { return []ent{file(".", "x", 0o644)} },
			code: layer.CodeInvalidTar,
		},
	}
	for _, c := range cases {
		for _, mode := range []layer.Mode{layer.Flatten, layer.Layer} {
			if c.only != nil && *c.only != mode {
				continue
			}
			t.Run(c.name+"/"+mode.String(), func(t *testing.T) {
				f := newFixture(t)
				f.mode = mode
				_, err := f.apply(t, layer.Options{Mode: mode}, c.ents(f)...)
				if c.code != "" {
					wantCode(t, c.name, err, c.code)
					return
				}
				if err != nil {
					t.Fatalf("apply: %v", err)
				}
				if c.check != nil {
					c.check(t, f)
				}
			})
		}
	}
}

// TestSymlinkInLowerLayer: a symlink to outside left by one layer is not
// followed out of the root by the next.
func TestSymlinkInLowerLayer(t *testing.T) {
	f := newFixture(t)
	f.mustApply(t, layer.Options{}, symlink("etc", f.outside), symlink("lib", "/"+strings.TrimPrefix(f.outside, "/")+"/dir"))
	_, err := f.apply(t, layer.Options{}, file("etc/canary", "pwned", 0o644))
	wantCode(t, "a file through a lower layer's symlink", err, layer.CodeNotADirectory)
	_, err = f.apply(t, layer.Options{}, hardlink("h", "lib/keep"))
	wantCode(t, "a hard link through a lower layer's symlink", err, layer.CodeHardlinkInvalid)
	f.mustApply(t, layer.Options{}, whiteout("lib/.wh.keep"), whiteout("etc/.wh..wh..opq"))
}

// TestRootSymlinkSwap: a layer that turns a directory into a symlink to
// outside, with files and directory modes before and after, still ends
// inside the root (the deferred directory modes included).
func TestRootSymlinkSwap(t *testing.T) {
	f := newFixture(t)
	f.mustApply(t, layer.Options{},
		dir("d", 0o700), dir("d/sub", 0o555), file("d/sub/x", "x", 0o644),
		whiteout(".wh.d"), symlink("d", f.outside),
		dir("d2", 0o751),
	)
	if got := describe(t, filepath.Join(f.root, "d")); got != "symlink -> "+f.outside {
		t.Errorf("d is %s", got)
	}
	if got := lstatMode(t, f.outside); got != 0o755 {
		t.Errorf("outside's mode changed to %04o", got)
	}
}

// TestDevicesSkipped: device nodes and FIFOs are never made; by default
// they are skipped and listed, and RefuseDevices refuses the layer.
func TestDevicesSkipped(t *testing.T) {
	ents := []ent{device("dev/null", tar.TypeChar), device("dev/sda", tar.TypeBlock), device("run/fifo", tar.TypeFifo), ent{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "wh", Mode: 0o600}}}
	f := newFixture(t)
	st := f.mustApply(t, layer.Options{}, ents...)
	if st.SkippedTotal != 4 || len(st.Skipped) != 4 || st.Skipped[0] != (layer.Skip{Name: "dev/null", Reason: "device"}) || st.Skipped[2].Reason != "fifo" {
		t.Errorf("skipped: %d %+v", st.SkippedTotal, st.Skipped)
	}
	for _, p := range []string{"dev/null", "dev/sda", "run/fifo", "wh"} {
		absent(t, filepath.Join(f.root, p))
	}
	for _, e := range ents {
		g := newFixture(t)
		_, err := g.apply(t, layer.Options{RefuseDevices: true}, e)
		wantCode(t, e.hdr.Name, err, layer.CodeDeviceRefused)
	}
}

// TestSetuidCleared: setuid and setgid bits never reach a file; a
// directory keeps setgid and sticky, which grant nothing.
func TestSetuidCleared(t *testing.T) {
	for _, mode := range []layer.Mode{layer.Flatten, layer.Layer} {
		f := newFixture(t)
		st := f.mustApply(t, layer.Options{Mode: mode},
			file("su", "#!/bin/sh\n", 0o4755),
			file("wall", "#!/bin/sh\n", 0o2755),
			file("both", "#!/bin/sh\n", 0o6777),
			dir("mail", 0o2775),
			dir("tmp", 0o1777),
			file("plain", "", 0o640),
		)
		want := map[string]uint32{"su": 0o755, "wall": 0o755, "both": 0o777, "mail": 0o2775, "tmp": 0o1777, "plain": 0o640}
		for p, m := range want {
			if got := lstatMode(t, filepath.Join(f.root, p)); got != m {
				t.Errorf("%s: %s has mode %04o, want %04o", mode, p, got, m)
			}
		}
		if st.SetuidCleared != 3 {
			t.Errorf("%s: SetuidCleared = %d, want 3", mode, st.SetuidCleared)
		}
	}
}

// TestSetuidHardlink: a hard link to a stripped file stays stripped.
func TestSetuidHardlink(t *testing.T) {
	f := newFixture(t)
	f.mustApply(t, layer.Options{}, file("su", "x", 0o4755), ent{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "su2", Linkname: "su", Mode: 0o4755}})
	if got := lstatMode(t, filepath.Join(f.root, "su2")); got != 0o755 {
		t.Errorf("su2 has mode %04o", got)
	}
}

// TestXattrs: only user.* xattrs, never user.overlay.*, and only when
// asked; file capabilities (security.capability) never.
func TestXattrs(t *testing.T) {
	x := file("ping", "x", 0o755)
	x.hdr.PAXRecords = map[string]string{
		"SCHILY.xattr.security.capability":    "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		"SCHILY.xattr.user.overlay.opaque":    "y",
		"SCHILY.xattr.trusted.overlay.opaque": "y",
		"SCHILY.xattr.user.note":              "kept",
	}
	d := dir("d", 0o755)
	d.hdr.PAXRecords = map[string]string{"SCHILY.xattr.user.overlay.opaque": "y", "SCHILY.xattr.user.note": "kept"}
	for _, apply := range []bool{false, true} {
		f := newFixture(t)
		st := f.mustApply(t, layer.Options{Xattrs: apply}, x, d)
		for _, p := range []string{"ping", "d"} {
			full := filepath.Join(f.root, p)
			for _, name := range []string{"security.capability", "user.overlay.opaque", "trusted.overlay.opaque"} {
				if _, err := unix.Lgetxattr(full, name, make([]byte, 64)); err == nil {
					t.Errorf("%s has %s", p, name)
				}
			}
			buf := make([]byte, 64)
			n, err := unix.Lgetxattr(full, "user.note", buf)
			switch {
			case apply && err == unix.EOPNOTSUPP:
				t.Skip("the file system holds no user xattrs")
			case apply && (err != nil || string(buf[:n]) != "kept"):
				t.Errorf("%s: user.note = %q, %v", p, buf[:n], err)
			case !apply && err == nil:
				t.Errorf("%s has user.note without Xattrs", p)
			}
		}
		want := 4
		if !apply {
			want = 6
		}
		if st.XattrsDropped != want {
			t.Errorf("Xattrs=%v: %d dropped, want %d", apply, st.XattrsDropped, want)
		}
	}
}

var flatten, own = layer.Flatten, layer.Layer

func hashFile(t testing.TB, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestMountsInsideRoot: a root with mounts below it (a live root's /proc,
// a bind of a host directory) is never written, emptied or left through
// them: resolution refuses to cross a mount point.
func TestMountsInsideRoot(t *testing.T) {
	needRoot(t, "mounts /proc and a bind inside the root")
	f := newFixture(t)
	for _, d := range []string{"proc", "mnt"} {
		if err := os.Mkdir(filepath.Join(f.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("proc", filepath.Join(f.root, "proc"), "proc", 0, ""); err != nil {
		t.Skipf("cannot mount proc here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(filepath.Join(f.root, "proc"), unix.MNT_DETACH) })
	if err := unix.Mount(filepath.Join(f.outside, "dir"), filepath.Join(f.root, "mnt"), "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(filepath.Join(f.root, "mnt"), unix.MNT_DETACH) })
	rel := strings.TrimPrefix(f.canary, "/")
	for name, ents := range map[string][]ent{
		"file_in_bind":          {file("mnt/keep", "pwned", 0o644)},
		"dir_in_bind":           {dir("mnt/new", 0o755)},
		"whiteout_in_bind":      {whiteout("mnt/.wh.keep")},
		"whiteout_of_bind":      {whiteout(".wh.mnt")},
		"opaque_bind":           {whiteout("mnt/.wh..wh..opq")},
		"opaque_root":           {whiteout(".wh..wh..opq")},
		"through_proc":          {file("proc/self/root/"+rel, "pwned", 0o644)},
		"symlink_through_proc":  {symlink("p", "/proc/1/root"), file("p/"+rel, "pwned", 0o644)},
		"hardlink_through_bind": {hardlink("h", "mnt/keep")},
	} {
		_, err := f.apply(t, layer.Options{}, ents...)
		code := layer.CodeNotADirectory // "lies across a mount point"
		if name == "hardlink_through_bind" {
			code = layer.CodeHardlinkInvalid
		}
		if !errdefs.HasCode(err, code) {
			t.Errorf("%s: %v, want %s", name, err, code)
		}
	}
	if got := readFile(t, filepath.Join(f.outside, "dir", "keep")); got != "keep" {
		t.Errorf("the bound directory's file is %q", got)
	}
}
