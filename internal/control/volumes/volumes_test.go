package volumes_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/volumes"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// TestVolumeRootSticky: a volume's root is world-writable like /tmp, and
// sticky like it, so one user of a sandbox cannot delete or rename
// another's files in it (os.Chmod drops a raw 0o1777's sticky bit: it
// needs os.ModeSticky); volumes made without it get it at start.
func TestVolumeRootSticky(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn, _, _, err := auth.CreateTenant(tenancy.System(context.Background()), st, "t")
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})
	// A volume an earlier hutch made without the sticky bit, and one
	// whose root a sandbox made private since.
	dir := filepath.Join(t.TempDir(), "volumes")
	for name, mode := range map[string]fs.FileMode{"old": 0o777, "private": 0o700} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := volumes.New(dir, storage.Open(storage.Info{}), st, nil, events.New(st, events.Config{}), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{"old": fs.ModeDir | fs.ModeSticky | 0o777, "private": fs.ModeDir | 0o700} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("at start, the volume %s is %v; want %v", name, fi.Mode(), want)
		}
	}
	if _, err := svc.Create(ctx, api.CreateVolumeRequest{Name: "data", SizeMB: 1, SizeBestEffort: true}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	dirs, err := svc.Resolve(ctx, []api.VolumeMount{{Name: "data", Path: "/data"}})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dirs[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := fs.ModeDir | fs.ModeSticky | 0o777; fi.Mode() != want {
		t.Errorf("the volume's root is %v; want %v", fi.Mode(), want)
	}
}
