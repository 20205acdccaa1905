package auth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// AdminKeyFile is the name, in the data directory, of the file that holds
// the admin key made on first start.
const AdminKeyFile = "admin.key"

// AdminTenant is the name of the tenant made on first start.
const AdminTenant = "admin"

// Bootstrap makes a fresh installation usable. On first start, when the
// store has no tenant, it creates the tenant "admin" with one admin key and
// writes the full key to <dataDir>/admin.key (mode 0600, in a 0700
// directory); created is then true. On every later start it changes
// nothing: if admin.key is gone it says so in the log but mints no new key.
// It logs where the key is, never the key.
//
// The key file is written before the store commits, and removed if the
// store fails: a crash in between leaves a store with no tenant, so the
// next start bootstraps again and overwrites the stale file.
func Bootstrap(ctx context.Context, st store.Tenants, dataDir string, log *slog.Logger) (keyPath string, created bool, retErr error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx = tenancy.System(ctx)
	keyPath = filepath.Join(dataDir, AdminKeyFile)

	tenants, err := st.ListTenants(ctx)
	if err != nil {
		return keyPath, false, fmt.Errorf("bootstrap: list tenants: %w", err)
	}
	if len(tenants) > 0 {
		if _, err := os.Stat(keyPath); errors.Is(err, fs.ErrNotExist) {
			log.InfoContext(ctx, "admin key file is absent; no new key is made: create keys with an existing admin key",
				"path", keyPath)
		}
		return keyPath, false, nil
	}

	if err := privateDir(dataDir, log); err != nil {
		return keyPath, false, fmt.Errorf("bootstrap: %w", err)
	}
	tenant := store.Tenant{ID: ids.New(), Name: AdminTenant}
	key, secret := NewKey(tenant.ID, "bootstrap", api.RoleAdmin)
	if err := writeFileAtomic(keyPath, []byte(secret+"\n"), 0o600); err != nil {
		return keyPath, false, fmt.Errorf("bootstrap: write %s: %w", keyPath, err)
	}
	if err := st.CreateTenant(ctx, tenant, key); err != nil {
		_ = os.Remove(keyPath)
		if errors.Is(err, errdefs.ErrConflict) {
			// Another replica sharing the store bootstrapped first.
			log.InfoContext(ctx, "admin tenant was created by another instance", "path", keyPath)
			return keyPath, false, nil
		}
		return keyPath, false, fmt.Errorf("bootstrap: create admin tenant: %w", err)
	}
	log.InfoContext(ctx, "created the admin tenant and key; the key is in the file, readable only by this user",
		"path", keyPath, logattr.Tenant(tenant.ID), logattr.Key(key.ID))
	return keyPath, true, nil
}

// privateDir makes dir, or tightens it, so that no one else may read or
// write it: it holds the database and keys. Search permission for others
// (0711) is kept: the process driver needs it so sandbox uids can reach
// their own directories below, and it reveals no names.
func privateDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o066 != 0 {
		// fi.Mode(), not Perm(): the setgid and sticky bits stay.
		if err := os.Chmod(dir, fi.Mode()&^0o066); err != nil {
			return err
		}
		log.Warn("data directory was readable or writable by others; removed that",
			"path", dir, "was", fi.Mode().Perm().String())
	}
	return nil
}

// BootstrapKey is Bootstrap for a fleet whose operator chose the admin
// key ($HUTCH_ADMIN_KEY, as `hutch key generate` prints one): when the
// store has no tenant it creates the tenant "admin" with full as its
// admin key, and writes no file (a replica's data directory may not
// outlive it); otherwise it changes nothing. created says it made the
// tenant. A key that is not well formed is refused before anything is
// made; one another replica's bootstrap beat is no error.
func BootstrapKey(ctx context.Context, st store.Tenants, full string, log *slog.Logger) (created bool, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx = tenancy.System(ctx)
	id, secret, err := ParseKey(full)
	if err != nil {
		return false, errors.New("$HUTCH_ADMIN_KEY is not a hutch API key (hk_<id>_<secret>): make one with `hutch key generate`")
	}
	tenants, err := st.ListTenants(ctx)
	if err != nil {
		return false, fmt.Errorf("bootstrap: list tenants: %w", err)
	}
	if len(tenants) > 0 {
		return false, nil
	}
	tenant := store.Tenant{ID: ids.New(), Name: AdminTenant}
	key, _ := NewKey(tenant.ID, "bootstrap", api.RoleAdmin)
	key.ID, key.Prefix, key.Hash = id, keyPrefix+id, HashSecret(secret)
	if err := st.CreateTenant(ctx, tenant, key); err != nil {
		if errors.Is(err, errdefs.ErrConflict) {
			return false, nil // another replica sharing the store bootstrapped first
		}
		return false, fmt.Errorf("bootstrap: create admin tenant: %w", err)
	}
	log.InfoContext(ctx, "created the admin tenant with the key of $HUTCH_ADMIN_KEY", logattr.Tenant(tenant.ID), logattr.Key(key.ID))
	return true, nil
}
