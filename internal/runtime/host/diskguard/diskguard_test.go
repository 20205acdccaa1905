package diskguard_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/host/diskguard"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// smallFS mounts a tmpfs of size bytes for the test (root only).
func smallFS(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skip("tmpfs:", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes into dir until the filesystem is full and returns the file.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler-"+ids.New())
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return p
		}
	}
}

// TestFullFilesystem: sandbox data fills the data directory's filesystem.
// Growth is refused with 507 and the reason; the store's next write still
// goes through on the reserve; once the reserve is gone too, a write is a
// 507 that says the disk is full, not a bare error (which the API made a
// 500); and freeing space brings the reserve back.
func TestFullFilesystem(t *testing.T) {
	dir := smallFS(t, "16m")
	g := diskguard.New(diskguard.Config{Dir: dir, Reserve: 2 << 20, ReserveInodes: 16, Log: slog.New(slog.DiscardHandler)})
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	reg, _ := store.Lookup(sqlite.Name)
	st, err := reg.Factory(context.Background(), store.Options{Dir: dir, OnFull: g.Release})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sys := tenancy.System(context.Background())
	tenant := func() error { return st.CreateTenant(sys, store.Tenant{ID: ids.New(), Name: "t-" + ids.New()}) }
	if err := g.Check("a new sandbox"); err != nil {
		t.Fatalf("Check on an empty filesystem: %v", err)
	}

	fill(t, dir)
	time.Sleep(1100 * time.Millisecond) // past Check's cache
	err = g.Check("a new sandbox")
	if !errors.Is(err, errdefs.ErrInsufficientStorage) || !errdefs.HasCode(err, "insufficient_storage") {
		t.Fatalf("Check on a full filesystem = %v; want 507 insufficient_storage", err)
	}
	if err := tenant(); err != nil {
		t.Fatalf("a store write on the reserve: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, diskguard.BallastName)); !os.IsNotExist(err) {
		t.Fatalf("the reserve is still there after the store needed it: %v", err)
	}
	fill(t, dir)
	var failed error
	for range 200 {
		if failed = tenant(); failed != nil {
			break
		}
	}
	if !errors.Is(failed, errdefs.ErrInsufficientStorage) {
		t.Fatalf("a store write on a full filesystem with no reserve = %v; want insufficient storage", failed)
	}
	_, _, msg := errdefs.Classify(failed)
	if msg == "" || msg == "internal error" {
		t.Fatalf("the message %q does not say what is full", msg)
	}

	// Room again: growth is allowed and the reserve comes back.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != sqlite.FileName && e.Name() != sqlite.FileName+"-wal" && e.Name() != sqlite.FileName+"-shm" {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	time.Sleep(1100 * time.Millisecond)
	if err := g.Check("a new sandbox"); err != nil {
		t.Fatalf("Check after space was freed: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, diskguard.BallastName))
	if err != nil {
		t.Fatalf("the reserve was not made again: %v", err)
	}
	n, _ := io.Copy(io.Discard, f)
	f.Close()
	if n != 2<<20 {
		t.Fatalf("the reserve holds %d bytes; want %d", n, 2<<20)
	}
	if err := tenant(); err != nil {
		t.Fatal(err)
	}
}
