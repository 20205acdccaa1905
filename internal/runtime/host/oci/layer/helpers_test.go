package layer_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/host/oci/layer"
)

// ent is one entry of a tar the tests build.
type ent struct {
	hdr  tar.Header
	body string
}

var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func dir(name string, mode int64) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: epoch}}
}

func file(name, body string, mode int64) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: epoch}, body: body}
}

func symlink(name, target string) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: epoch}}
}

func hardlink(name, target string) ent {
	return ent{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644, ModTime: epoch}}
}

// whiteout is the empty file a builder writes for a deletion.
func whiteout(name string) ent { return file(name, "", 0o644) }

func device(name string, typ byte) ent {
	return ent{hdr: tar.Header{Typeflag: typ, Name: name, Mode: 0o666, Devmajor: 1, Devminor: 3, ModTime: epoch}}
}

// tarOf writes the entries as a tar stream (PAX where a name needs it).
func tarOf(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("tar header %q: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fixture is a root to apply layers to, next to things a layer must not
// reach: outside/canary, a file, and outside/dir/, a directory with a
// file. The fixture checks at cleanup that everything but the root is
// as it was.
type fixture struct {
	base    string // holds root and outside
	root    string
	outside string
	canary  string
	before  map[string]string
	mode    layer.Mode // the mode the test applies in, for its checks
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	f.canary = filepath.Join(f.outside, "canary")
	for _, d := range []string{f.root, f.outside, filepath.Join(f.outside, "dir")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, f.canary, "canary")
	writeFile(t, filepath.Join(f.outside, "dir", "keep"), "keep")
	f.before = snapshot(t, base, f.root)
	t.Cleanup(func() {
		f.checkOutside(t)
		// Unprivileged, t.TempDir's own removal stops at a 0555 directory.
		if err := layer.RemoveAll(f.root); err != nil {
			t.Error(err)
		}
	})
	return f
}

// checkOutside fails the test if anything outside the root changed.
func (f *fixture) checkOutside(t *testing.T) {
	t.Helper()
	after := snapshot(t, f.base, f.root)
	if d := diffMaps(f.before, after); d != "" {
		t.Errorf("something outside the root changed:\n%s", d)
	}
}

// apply applies a layer built from ents onto the fixture's root.
func (f *fixture) apply(t *testing.T, opts layer.Options, ents ...ent) (layer.Stats, error) {
	t.Helper()
	return layer.Apply(context.Background(), f.root, bytes.NewReader(tarOf(t, ents...)), opts)
}

// mustApply applies and fails the test on an error.
func (f *fixture) mustApply(t *testing.T, opts layer.Options, ents ...ent) layer.Stats {
	t.Helper()
	st, err := f.apply(t, opts, ents...)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return st
}

// snapshot describes every path below base but skip: type, mode, owner,
// links, content.
func snapshot(t testing.TB, base, skip string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		m[p] = describe(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tree describes every path below root, relative to it (root excluded).
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			m[rel] = describe(t, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// describe is one path's type, mode and content (or target), and, for a
// file with hard links, their number.
func describe(t testing.TB, p string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	mode := st.Mode & 0o7777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fmt.Sprintf("dir %04o", mode)
	case unix.S_IFLNK:
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		return "symlink -> " + target
	case unix.S_IFREG:
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprintf("file %04o %q", mode, short(b))
		if st.Nlink > 1 {
			s += fmt.Sprintf(" links=%d", st.Nlink)
		}
		return s
	case unix.S_IFCHR:
		return fmt.Sprintf("char %d/%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	return fmt.Sprintf("other %o", st.Mode)
}

func short(b []byte) string {
	if len(b) > 64 {
		sum := sha256.Sum256(b)
		return fmt.Sprintf("%d bytes sha256:%s", len(b), hex.EncodeToString(sum[:8]))
	}
	return string(b)
}

func diffMaps(a, b map[string]string) string {
	var lines []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			lines = append(lines, fmt.Sprintf("- %s: %s", k, v))
		} else if w != v {
			lines = append(lines, fmt.Sprintf("~ %s: %s → %s", k, v, w))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("+ %s: %s", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func writeFile(t testing.TB, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantCode fails unless err carries code (and is an errdefs error).
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	var e *errdefs.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("%s: error %v, want code %s", what, err, code)
	}
}

// needRoot skips a test that needs root, saying why.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: " + why)
	}
}

// lstatMode is p's mode bits, or fails.
func lstatMode(t testing.TB, p string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}

// absent fails if p exists.
func absent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v), and must not", p, err)
	}
}
