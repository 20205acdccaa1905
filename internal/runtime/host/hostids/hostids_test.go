package hostids

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestTakeClaimReleaseSweep(t *testing.T) {
	reg := t.TempDir()
	p, err := New(reg, 1000, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	owners := t.TempDir()
	seen := map[uint32]bool{}
	for i := 0; i < 3; i++ {
		dir := filepath.Join(owners, string(rune('a'+i)))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		first, err := p.Take(dir)
		if err != nil {
			t.Fatal(err)
		}
		if first < 1000 || first >= 1030 || (first-1000)%10 != 0 || seen[first] {
			t.Fatalf("Take = %d: outside the ranges or reused", first)
		}
		seen[first] = true
	}
	if _, err := p.Take(filepath.Join(owners, "d")); err == nil {
		t.Fatal("a fourth Take succeeded with three ranges")
	}
	// A second pool on the same registry (another server) sees them taken.
	q, err := New(reg, 1000, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Take(filepath.Join(owners, "e")); err == nil {
		t.Fatal("another pool took a range this one holds")
	}
	// Sweep frees the range of an owner that is gone, and only that one.
	os.Remove(filepath.Join(owners, "b"))
	p.Sweep(owners)
	first, err := q.Take(filepath.Join(owners, "f"))
	if err != nil {
		t.Fatalf("after the sweep: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(reg, itoa(first)))
	if string(b) != filepath.Join(owners, "f") {
		t.Fatalf("registry file holds %q", b)
	}
	p.Release(first)
	if _, err := os.Stat(filepath.Join(reg, itoa(first))); !os.IsNotExist(err) {
		t.Fatalf("Release left the registry file: %v", err)
	}
}

func TestNewRefusesOverflow(t *testing.T) {
	if _, err := New(t.TempDir(), 4_000_000_000, 65536, 10_000); err == nil {
		t.Fatal("New accepted ranges beyond uid_t")
	}
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// TestSweepStaleOfOthers: a range of another server whose directory is
// gone is released once it is old enough, and not before.
func TestSweepStaleOfOthers(t *testing.T) {
	reg := t.TempDir()
	p, err := New(reg, 1000, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "other-server", "sb")
	first, err := p.Take(gone)
	if err != nil {
		t.Fatal(err)
	}
	p.Sweep(t.TempDir())
	if _, err := os.Stat(filepath.Join(reg, itoa(first))); err != nil {
		t.Fatalf("a fresh range of another server was released: %v", err)
	}
	old := time.Now().Add(-2 * staleAfter)
	if err := os.Chtimes(filepath.Join(reg, itoa(first)), old, old); err != nil {
		t.Fatal(err)
	}
	p.Sweep(t.TempDir())
	if _, err := os.Stat(filepath.Join(reg, itoa(first))); !os.IsNotExist(err) {
		t.Fatalf("a stale range of another server was kept: %v", err)
	}
}
