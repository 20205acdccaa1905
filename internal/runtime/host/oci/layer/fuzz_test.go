package layer_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// FuzzEntryName: whatever a layer names, the path used is relative, clean,
// within Linux's limits, and never has a ".." component or a whiteout
// inside it.
func FuzzEntryName(f *testing.F) {
	for _, s := range []string{"a/b", "/etc/passwd", "../x", "a/../../b", "./", ".", "//a//b/", ".wh..wh..opq", "a/.wh.b", ".wh.a/b", "a/./.wh..", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rel, err := layer.EntryName(name)
		if err != nil {
			return
		}
		if rel == "" || strings.HasPrefix(rel, "/") || len(rel) > 4096 || strings.IndexByte(rel, 0) >= 0 {
			t.Fatalf("%q → %q", name, rel)
		}
		if rel == "." {
			return
		}
		parts := strings.Split(rel, "/")
		for i, c := range parts {
			if c == "" || c == "." || c == ".." || len(c) > 255 || (i < len(parts)-1 && strings.HasPrefix(c, ".wh.")) {
				t.Fatalf("%q → %q: component %q", name, rel, c)
			}
		}
	})
}

// FuzzApply: whatever the stream, nothing outside the root changes (the
// fixture checks at the end of each run) and nothing panics.
func FuzzApply(f *testing.F) {
	seeds := [][]ent{
		{symlink("a", "/etc"), file("a/passwd", "x", 0o644)},
		{symlink("a", ".."), file("a/outside/canary", "x", 0o644)},
		{symlink("s", "../outside"), hardlink("h", "s/canary"), whiteout("s/.wh.canary")},
		{dir("d", 0o555), file("d/f", "x", 0o4755), whiteout(".wh.d"), symlink("d", "../outside/dir"), whiteout("d/.wh..wh..opq")},
		{file("../outside/canary", "x", 0o644)},
		{whiteout("x/.wh...")},
	}
	for _, s := range seeds {
		f.Add(tarOf(f, s...), false)
		f.Add(tarOf(f, s...), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, own bool) {
		fx := newFixture(t)
		mode := layer.Flatten
		if own {
			mode = layer.Layer
		}
		layer.Apply(context.Background(), fx.root, bytes.NewReader(b), layer.Options{Mode: mode, MaxBytes: 1 << 20, MaxEntries: 256})
	})
}
