package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// What a tenant's deletion erases: every Delete*ByTenant. Each is the
// system's alone, and deletes in batches of store.TrimBatch rows, each
// its own statement, so a tenant with many rows never holds locks for
// long. Nothing new reaches a tenant being deleted (migration 0001's
// trigger), so a batch that deletes fewer is the last.

// DeleteKeysByTenant implements store.Store.
func (s *Store) DeleteKeysByTenant(ctx context.Context, tenantID string) ([]string, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `DELETE FROM api_keys WHERE tenant_id = $1 RETURNING id`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("delete the keys of tenant %s: %w", tenantID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("delete the keys of tenant %s: %w", tenantID, err)
	}
	return ids, nil
}

// DeleteSandboxesByTenant implements store.Store. A destroyed sandbox's
// share is nothing, so the usage counters stay as they are.
func (s *Store) DeleteSandboxesByTenant(ctx context.Context, tenantID string) (int, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return 0, err
	}
	n, err := s.trimBatches(ctx, `DELETE FROM sandboxes WHERE id IN
		(SELECT id FROM sandboxes WHERE tenant_id = @tenant AND state = @state LIMIT @batch)`,
		pgx.NamedArgs{"tenant": tenantID, "state": api.StateDestroyed})
	if err != nil {
		return n, fmt.Errorf("delete the sandboxes of tenant %s: %w", tenantID, err)
	}
	var (
		id    string
		state api.SandboxState
	)
	err = s.pool.QueryRow(ctx, `SELECT id, state FROM sandboxes WHERE tenant_id = $1 LIMIT 1`, tenantID).Scan(&id, &state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
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
	n, err := s.trimBatches(ctx, `DELETE FROM `+table+` WHERE id IN
		(SELECT id FROM `+table+` WHERE tenant_id = @tenant LIMIT @batch)`, pgx.NamedArgs{"tenant": tenantID})
	if err != nil {
		return n, fmt.Errorf("delete the %s of tenant %s: %w", table, tenantID, err)
	}
	return n, nil
}
