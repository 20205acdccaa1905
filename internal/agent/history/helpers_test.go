package history

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil"
)

// newStore opens a store outside any tree. Its racy window is zero, so a
// file written by the test before a checkpoint is trusted by the next one
// (TestRacyFilesAreReadAgain covers the window).
func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"), opts)
	if err != nil {
		t.Fatal(err)
	}
	s.racy = 0
	return s
}

// reopen opens s's directory again, as an agent does after a restart.
func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	s2, err := Open(s.dir, s.opts)
	if err != nil {
		t.Fatal(err)
	}
	s2.racy = 0
	return s2
}

// newTree makes an empty tree directory (0755).
func newTree(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openTree(t testing.TB, dir string) *os.File {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func checkpoint(t testing.TB, s *Store, dir, kind string) Checkpoint {
	t.Helper()
	cp, err := s.Checkpoint(context.Background(), openTree(t, dir), kind, "test")
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	return cp
}

func restore(t testing.TB, s *Store, dir, id string) RestoreResult {
	t.Helper()
	res, err := s.Restore(context.Background(), openTree(t, dir), id, 0)
	if err != nil {
		t.Fatalf("Restore(%s): %v", id, err)
	}
	return res
}

// snapshot reads a tree for comparison: everything but atimes, which
// reading changes.
func snapshot(t testing.TB, dir string) map[string]testutil.TreeNode {
	t.Helper()
	nodes := testutil.ReadTree(t, dir)
	for k, n := range nodes {
		n.Atime = 0
		nodes[k] = n
	}
	return nodes
}

func sameTree(t testing.TB, what string, want, got map[string]testutil.TreeNode) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s: trees differ (-want +got):\n%s", what, d)
	}
}

func write(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// wantCode checks that err is classified with class and code.
func wantCode(t testing.TB, what string, err error, class error, code string) {
	t.Helper()
	var e *errdefs.Error
	if !errors.As(err, &e) || !errors.Is(err, class) || e.Code != code {
		t.Errorf("%s: error %v, want class %v code %s", what, err, class, code)
	}
}

// countBlobs counts the blob files on disk.
func countBlobs(t testing.TB, s *Store) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(s.dir, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}
