package layer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// unpackLayers unpacks each of layers (bottom first) in Layer mode into
// a directory of its own under base and returns them, bottom first.
func unpackLayers(t testing.TB, base string, layers ...[]ent) []string {
	t.Helper()
	var dirs, lowers []string
	for i, l := range layers {
		dst := filepath.Join(base, "l"+string(rune('1'+i)))
		if _, err := layer.Unpack(context.Background(), dst, bytes.NewReader(tarOf(t, l...)), layer.Options{Mode: layer.Layer, Lower: lowers}); err != nil {
			t.Fatalf("layer %d: %v", i+1, err)
		}
		dirs = append(dirs, dst)
		lowers = append([]string{dst}, lowers...)
	}
	return dirs
}

// TestLookupMatchesFlatten: Stat and ReadFile over the layers unpacked one
// by one find what flattening them gives (whiteouts, opaque directories,
// a directory made again, links), and nothing it deleted.
func TestLookupMatchesFlatten(t *testing.T) {
	dirs := unpackLayers(t, t.TempDir(), threeLayers()...)
	for p, want := range wantImage {
		if got := describeIn(t, dirs, p); got != want && !(strings.HasPrefix(want, "symlink") && got == "symlink") {
			t.Errorf("%s in the layers is %s; flattened it is %s", p, got, want)
		}
	}
	for _, p := range []string{"etc/a", "gone", "gonedir", "gonedir/sub/f", "opt/x", "opt/sub", "opt/new", "var/old", "srv/a/old", "srv/b", "keep/nothing", "lnk/a"} {
		if fi, err := layer.Stat(dirs, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%s) = %v, %v; want it gone", p, fi, err)
		}
		if _, err := layer.ReadFile(dirs, p, 1<<20); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%s): %v; want it gone", p, err)
		}
	}
	// lnk -> keep, in the top layer: followed inside the image.
	if b, err := layer.ReadFile(dirs, "lnk/k2", 1<<20); err != nil || string(b) != "k2" {
		t.Errorf("ReadFile(lnk/k2) = %q, %v; want k2", b, err)
	}
	if _, err := layer.ReadFile(dirs, "etc", 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a directory: %v; want fs.ErrNotExist", err)
	}
	if _, err := layer.ReadFile(dirs, "etc/b", 1); errors.Is(err, fs.ErrNotExist) || err == nil {
		t.Errorf("ReadFile over its limit: %v; want too large", err)
	}
}

// describeIn is describe of p as Stat and ReadFile find it in the
// layers dirs (a symlink without its target).
func describeIn(t *testing.T, dirs []string, p string) string {
	t.Helper()
	fi, err := layer.Stat(dirs, "/"+p)
	if err != nil {
		return err.Error()
	}
	mode := fi.Sys().(*syscall.Stat_t).Mode & 0o7777
	switch {
	case fi.IsDir():
		return fmt.Sprintf("dir %04o", mode)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "symlink"
	}
	b, err := layer.ReadFile(dirs, p, 1<<20)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("file %04o %q", mode, b)
}

// TestLookupStaysInRoot: links in the image, absolute or climbing with
// "..", lead to the same path in the image's root, never the host's; so
// do names that climb; a link loop ends; a fifo is not waited on.
func TestLookupStaysInRoot(t *testing.T) {
	base := t.TempDir()
	host := filepath.Join(base, "host")
	if err := os.Mkdir(host, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(host, "secret"), "host")
	in := strings.TrimPrefix(host, "/")
	up := strings.Repeat("../", strings.Count(host, "/")+3)
	img := filepath.Join(base, "img")
	if err := os.Mkdir(img, 0o755); err != nil {
		t.Fatal(err)
	}
	dirs := unpackLayers(t, img,
		[]ent{file(in+"/secret", "image", 0o644), dir("etc", 0o755)},
		[]ent{
			whiteout(".wh.etc"), symlink("etc", host), symlink("rel", up+in), symlink("file", host+"/secret"),
			symlink("dotdot", "../../../.."), symlink("loop", "loop2"), symlink("loop2", "loop"),
			symlink("nowhere", "/missing/secret"),
		},
	)
	for _, p := range []string{"/etc/secret", "etc/secret", "rel/secret", "file", "dotdot" + host + "/secret", "../../../.." + host + "/secret", "/etc/./secret", "/etc/../host/secret"} {
		b, err := layer.ReadFile(dirs, p, 1<<20)
		if err != nil || string(b) != "image" {
			t.Errorf("ReadFile(%s) = %q, %v; want the image's own %s/secret", p, b, err, host)
		}
	}
	if fi, err := layer.Stat(dirs, "etc"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Stat(etc) = %v, %v; want the link itself", fi, err)
	}
	if fi, err := layer.Stat(dirs, "etc/secret"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("Stat(etc/secret) = %v, %v; want the image's file", fi, err)
	}
	if _, err := layer.ReadFile(dirs, "loop", 1<<20); !errors.Is(err, unix.ELOOP) {
		t.Errorf("ReadFile of a link loop: %v; want ELOOP", err)
	}
	if _, err := layer.ReadFile(dirs, "nowhere", 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a link to nothing: %v; want fs.ErrNotExist", err)
	}
	// The image's copy gone, the link still never reaches the host's.
	if _, err := layer.ReadFile(dirs[1:], "etc/secret", 1<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile through a link to a host directory the image lacks: %v; want fs.ErrNotExist", err)
	}

	// A layer a sandbox wrote (a copy of its upper layer) may hold a fifo.
	upper := filepath.Join(base, "upper")
	if err := os.MkdirAll(filepath.Join(upper, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(upper, "etc", "passwd"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := layer.ReadFile([]string{upper}, "etc/passwd", 1<<20)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile of a fifo: %v; want fs.ErrNotExist", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile of a fifo waits for a writer")
	}
}

// FuzzLookup: whatever name an image's config or files give, a lookup
// ends inside the image: it never reads the host's file its links name.
func FuzzLookup(f *testing.F) {
	base := f.TempDir()
	host := filepath.Join(base, "host")
	if err := os.Mkdir(host, 0o700); err != nil {
		f.Fatal(err)
	}
	writeFile(f, filepath.Join(host, "secret"), "host")
	dirs := unpackLayers(f, base,
		[]ent{dir("etc", 0o755), file("etc/passwd", "root", 0o644), dir("a", 0o755), dir("a/b", 0o755)},
		[]ent{whiteout(".wh.etc"), symlink("etc", host), symlink("a/up", "../../../../../.."+host), symlink("a/b/self", "."), symlink("abs", "/")},
	)
	for _, s := range []string{"etc/secret", "/a/up/secret", "a/b/self/../../etc/secret", "abs/abs/..", "../" + host + "/secret", host + "/secret"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if b, err := layer.ReadFile(dirs, name, 1<<10); err == nil && string(b) == "host" {
			t.Fatalf("ReadFile(%q) read the host's file", name)
		}
		_, _ = layer.Stat(dirs, name)
	})
}
