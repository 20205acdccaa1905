package auth

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

func TestBootstrap(t *testing.T) {
	st := openStore(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	path, created, err := Bootstrap(ctx, st, dataDir, log)
	if err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	if !created || path != filepath.Join(dataDir, AdminKeyFile) {
		t.Fatalf("Bootstrap = %q, %v; want %s, true", path, created, filepath.Join(dataDir, AdminKeyFile))
	}
	for p, want := range map[string]os.FileMode{dataDir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat: %v", err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil || len(entries) != 1 || entries[0].Name() != AdminKeyFile {
		t.Errorf("data directory holds %v, %v; want only %s", entries, err, AdminKeyFile)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read key: %v", err)
	}
	key := strings.TrimSpace(string(raw))

	p, err := authenticate(&Authenticator{Store: st}, ctx, "Bearer "+key)
	if err != nil {
		t.Fatalf("the bootstrap key does not authenticate: %v", err)
	}
	if p.Role != api.RoleAdmin {
		t.Errorf("bootstrap key has role %q, want admin", p.Role)
	}
	sys := tenancy.System(ctx)
	tenants, err := st.ListTenants(sys)
	if err != nil || len(tenants) != 1 || tenants[0].Name != AdminTenant || tenants[0].ID != p.TenantID {
		t.Errorf("tenants after bootstrap: %+v, %v; want the admin tenant alone", tenants, err)
	}
	keys, err := st.ListKeys(sys)
	if err != nil || len(keys) != 1 {
		t.Errorf("keys after bootstrap: %d, %v; want 1", len(keys), err)
	}
	_, secret, _ := ParseKey(key)
	if !strings.Contains(logs.String(), path) || strings.Contains(logs.String(), secret) {
		t.Errorf("the log must name the key file and never hold the key:\n%s", logs.String())
	}

	// Later starts change nothing.
	for range 2 {
		path2, created, err := Bootstrap(ctx, st, dataDir, log)
		if err != nil || created || path2 != path {
			t.Errorf("second Bootstrap = %q, %v, %v; want %q, false, nil", path2, created, err, path)
		}
	}
	if again, err := os.ReadFile(path); err != nil || !bytes.Equal(again, raw) {
		t.Errorf("key file changed on a later start: %v", err)
	}
	if keys, _ := st.ListKeys(sys); len(keys) != 1 {
		t.Errorf("%d keys after later starts, want 1", len(keys))
	}

	// A lost key file is reported, not replaced.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if _, created, err := Bootstrap(ctx, st, dataDir, log); err != nil || created {
		t.Errorf("Bootstrap without the key file = %v, %v; want false, nil", created, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Bootstrap wrote a new key file: %v", err)
	}
	if !strings.Contains(logs.String(), "absent") {
		t.Errorf("the log does not say the key file is missing:\n%s", logs.String())
	}
	if keys, _ := st.ListKeys(sys); len(keys) != 1 {
		t.Errorf("%d keys after a start without the key file, want 1", len(keys))
	}
}

func TestBootstrapTightensDataDir(t *testing.T) {
	st := openStore(t)
	dataDir := t.TempDir()
	if err := os.Chmod(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, created, err := Bootstrap(context.Background(), st, dataDir, nil); err != nil || !created {
		t.Fatalf("Bootstrap = %v, %v", created, err)
	}
	fi, err := os.Stat(dataDir)
	if err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("data directory mode %v, %v; want 0711 (search kept, read and write removed)", fi.Mode().Perm(), err)
	}
}

// TestBootstrapKeepsSpecialBits: tightening the data directory takes only
// read and write from others; the operator's setgid and sticky bits stay
// (os.Chmod of Mode().Perm() would clear them).
func TestBootstrapKeepsSpecialBits(t *testing.T) {
	st := openStore(t)
	dataDir := t.TempDir()
	if err := os.Chmod(dataDir, 0o777|os.ModeSetgid|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Bootstrap(context.Background(), st, dataDir, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if want := os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o711; fi.Mode() != want {
		t.Errorf("data directory mode %v; want %v", fi.Mode(), want)
	}
}

func TestBootstrapStoreDown(t *testing.T) {
	st := openStore(t)
	dataDir := t.TempDir()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, created, err := Bootstrap(context.Background(), st, dataDir, nil); err == nil || created {
		t.Fatalf("Bootstrap on a closed store = %v, %v; want an error", created, err)
	}
	entries, _ := os.ReadDir(dataDir)
	if len(entries) != 0 {
		t.Errorf("data directory holds %v after a failed bootstrap, want nothing", entries)
	}
}

// failingCreate is the real store with CreateTenant failing, as a full disk
// or a lost connection would make it fail between the key file and the commit.
type failingCreate struct{ store.Store }

func (failingCreate) CreateTenant(context.Context, store.Tenant, ...store.Key) error {
	return errors.New("disk full")
}

func TestBootstrapRemovesKeyWhenCommitFails(t *testing.T) {
	st := openStore(t)
	dataDir := t.TempDir()
	if _, created, err := Bootstrap(context.Background(), failingCreate{st}, dataDir, nil); err == nil || created {
		t.Fatalf("Bootstrap with a failing commit = %v, %v; want an error", created, err)
	}
	entries, _ := os.ReadDir(dataDir)
	if len(entries) != 0 {
		t.Errorf("data directory holds %v after a failed commit, want nothing", entries)
	}
	// The next start, with a working store, bootstraps.
	if _, created, err := Bootstrap(context.Background(), st, dataDir, nil); err != nil || !created {
		t.Errorf("Bootstrap after the failure = %v, %v; want true, nil", created, err)
	}
}

// TestBootstrapKey: a first start with $HUTCH_ADMIN_KEY makes the admin
// tenant with that key and writes no file; a second replica's start, and
// a malformed key, make nothing.
func TestBootstrapKey(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if _, err := BootstrapKey(ctx, st, "hk_not_a_key", nil); err == nil || !strings.Contains(err.Error(), "hutch key generate") {
		t.Errorf("a malformed key: %v; want it refused with how to make one", err)
	}
	key := GenerateKey()
	if created, err := BootstrapKey(ctx, st, key, nil); err != nil || !created {
		t.Fatalf("BootstrapKey = %v, %v; want the tenant made", created, err)
	}
	p, err := authenticate(&Authenticator{Store: st}, ctx, "Bearer "+key)
	if err != nil || p.Role != api.RoleAdmin {
		t.Fatalf("the chosen key authenticates as %+v, %v; want an admin", p, err)
	}
	if created, err := BootstrapKey(ctx, st, GenerateKey(), nil); err != nil || created {
		t.Errorf("a second BootstrapKey = %v, %v; want nothing made", created, err)
	}
	if _, err := authenticate(&Authenticator{Store: st}, ctx, "Bearer "+GenerateKey()); err == nil {
		t.Error("a key no store holds authenticates")
	}
}
