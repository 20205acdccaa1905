package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// What a tenant's deletion erases: every Delete*ByTenant. Each is the
// system's alone, and deletes in batches of store.TrimBatch rows, each
// its own short write, so a tenant with many rows never holds the one
// writer for long. Nothing new reaches a tenant being deleted (migration
// 0021's triggers), so a batch that deletes fewer is the last.

// DeleteKeysByTenant implements store.Store.
func (s *Store) DeleteKeysByTenant(ctx context.Context, tenantID string) ([]string, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	var ids []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `DELETE FROM api_keys WHERE tenant_id = ? RETURNING id`, tenantID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("delete the keys of tenant %s: %w", tenantID, err)
	}
	return ids, nil
}

// DeleteSandboxesByTenant implements store.Store.
func (s *Store) DeleteSandboxesByTenant(ctx context.Context, tenantID string) (int, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return 0, err
	}
	n, err := s.trimBatches(ctx, `DELETE FROM sandboxes WHERE rowid IN
		(SELECT rowid FROM sandboxes WHERE tenant_id = ? AND state = ? LIMIT ?)`, tenantID, api.StateDestroyed)
	if err != nil {
		return n, fmt.Errorf("delete the sandboxes of tenant %s: %w", tenantID, err)
	}
	var id string
	var state api.SandboxState
	err = s.reads.QueryRowContext(ctx, `SELECT id, state FROM sandboxes WHERE tenant_id = ? LIMIT 1`, tenantID).Scan(&id, &state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return n, nil
	case err != nil:
		return n, fmt.Errorf("delete the sandboxes of tenant %s: %w", tenantID, err)
	}
	return n, store.SandboxNotDestroyed(id, tenantID, state)
}

// DeleteAppsByTenant implements store.Store.
func (s *Store) DeleteAppsByTenant(ctx context.Context, tenantID string) (int, error) {
	return s.eraseByTenant(ctx, "apps", tenantID)
}

// DeleteTemplatesByTenant implements store.Store.
func (s *Store) DeleteTemplatesByTenant(ctx context.Context, tenantID string) (int, error) {
	return s.eraseByTenant(ctx, "templates", tenantID)
}

// DeleteVolumesByTenant implements store.Store.
func (s *Store) DeleteVolumesByTenant(ctx context.Context, tenantID string) (int, error) {
	return s.eraseByTenant(ctx, "volumes", tenantID)
}

// DeleteSecretsByTenant implements store.Store.
func (s *Store) DeleteSecretsByTenant(ctx context.Context, tenantID string) (int, error) {
	return s.eraseByTenant(ctx, "secrets", tenantID)
}

// DeleteEventsByTenant implements store.Store.
func (s *Store) DeleteEventsByTenant(ctx context.Context, tenantID string) (int, error) {
	return s.eraseByTenant(ctx, "events", tenantID)
}

// eraseByTenant deletes every row of table (one of this file's, never a
// caller's string) that tenantID owns, with what cascades from them.
func (s *Store) eraseByTenant(ctx context.Context, table, tenantID string) (int, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return 0, err
	}
	n, err := s.trimBatches(ctx, `DELETE FROM `+table+` WHERE rowid IN
		(SELECT rowid FROM `+table+` WHERE tenant_id = ? LIMIT ?)`, tenantID)
	if err != nil {
		return n, fmt.Errorf("delete the %s of tenant %s: %w", table, tenantID, err)
	}
	return n, nil
}
