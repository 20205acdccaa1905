package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCheckpointUnchanged: a checkpoint of a tree of 5,000 files
// (100 directories of 50 files of 1 KiB) that did not change since the
// last one. The racy window is the real one, so the tree is left to age
// past it before the first checkpoint.
func BenchmarkCheckpointUnchanged(b *testing.B) {
	tree := newTree(b)
	for d := range 100 {
		dir := filepath.Join(tree, fmt.Sprintf("dir%03d", d))
		must(b, os.Mkdir(dir, 0o755))
		for f := range 50 {
			must(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%02d.txt", f)), randomBytes(1024), 0o644))
		}
	}
	s, err := Open(filepath.Join(b.TempDir(), "store"), Options{})
	must(b, err)
	time.Sleep(s.racy + 100*time.Millisecond)
	f := openTree(b, tree)
	if _, err := s.Checkpoint(context.Background(), f, KindTask, ""); err != nil {
		b.Fatal(err)
	}
	s.hashed.Store(0)
	for b.Loop() {
		if _, err := s.Checkpoint(context.Background(), f, KindTask, ""); err != nil {
			b.Fatal(err)
		}
	}
	if n := s.hashed.Load(); n != 0 {
		b.Errorf("checkpoints of an unchanged tree hashed %d bytes", n)
	}
}
