package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCopyTime measures Copy of a layer holding 10 MiB and of one holding
// 1 GiB of data (written for real, no holes) on each backend, and logs
// the figures; it asserts only that each Copy works and copies by the
// backend's method. It runs alone (not in parallel), so the figures are
// the machine's. -short skips it.
func TestCopyTime(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GiB on each of three filesystems")
	}
	for _, typ := range filesystems {
		t.Run(typ, func(t *testing.T) {
			size := int64(2 << 30)
			if typ == "ext4" {
				size = 3 << 30 // a byte copy of 1 GiB needs room for both
			}
			lfs, b := backendOn(t, typ, size)
			for _, tc := range []struct {
				name        string
				files, each int64
			}{
				{"10 MiB", 10, 1 << 20},
				{"1 GiB", 16, 64 << 20},
			} {
				src := filepath.Join(lfs.Dir, "src")
				dst := filepath.Join(lfs.Dir, "dst")
				if err := b.Make(src); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				for i := range tc.files {
					writeData(t, filepath.Join(src, fmt.Sprintf("f%02d", i)), tc.each)
				}
				syncfs(t, src)
				wrote := time.Since(start)

				start = time.Now()
				stats, err := b.Copy(context.Background(), src, dst)
				took := time.Since(start)
				if err != nil {
					t.Fatalf("Copy of %s: %v", tc.name, err)
				}
				if stats.Method != wantMethod[typ] {
					t.Errorf("Copy of %s by %q, want %q", tc.name, stats.Method, wantMethod[typ])
				}
				start = time.Now()
				if err := b.Remove(dst); err != nil {
					t.Fatal(err)
				}
				removed := time.Since(start)
				if err := b.Remove(src); err != nil {
					t.Fatal(err)
				}
				syncfs(t, lfs.Dir)
				t.Logf("%s: Copy of %s in %d files by %s: %v (writing it and syncing: %v; Remove of the copy: %v)",
					typ, tc.name, tc.files, stats.Method, took.Round(time.Microsecond), wrote.Round(time.Millisecond), removed.Round(time.Microsecond))
			}
		})
	}
}

// writeData writes size bytes of pseudo-random data (no runs of zeros, so
// no holes) to a new file at path.
func writeData(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.NewChaCha8([32]byte{'h', 'u', 't', 'c', 'h'})
	buf := make([]byte, 1<<20)
	rng.Read(buf)
	for off := int64(0); off < size; off += int64(len(buf)) {
		binary.LittleEndian.PutUint64(buf, uint64(off)) // no two MiB alike
		if _, err := f.Write(buf[:min(int64(len(buf)), size-off)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
