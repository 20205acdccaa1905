package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

const snapshotCols = `id, tenant_id, sandbox_id, name, template, driver, bytes, files, pause_ms, created_at`

// CreateSnapshot implements store.Store.
func (s *Store) CreateSnapshot(ctx context.Context, snap *store.Snapshot) error {
	if err := store.PrepareSnapshot(ctx, snap); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO snapshots (`+snapshotCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			snap.ID, snap.TenantID, snap.SandboxID, snap.Name, snap.Template, snap.Driver, snap.Bytes, snap.Files, snap.PauseMS,
			snap.CreatedAt)
		switch {
		case isForeignKey(err):
			return fmt.Errorf("create snapshot: %w", store.TenantNotFound(snap.TenantID))
		case err != nil:
			return fmt.Errorf("create snapshot: %w", err)
		}
		return nil
	})
}

// GetSnapshot implements store.Store.
func (s *Store) GetSnapshot(ctx context.Context, id string) (*store.Snapshot, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	args := pgx.NamedArgs{"id": id}
	cond := scoped(sc, "tenant_id", args)
	snap, err := scanSnapshot(s.pool.QueryRow(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE id = @id`+cond, args))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.SnapshotNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get snapshot %s: %w", id, err)
	}
	return &snap, nil
}

// ListSnapshots implements store.Store.
func (s *Store) ListSnapshots(ctx context.Context, q store.SnapshotQuery) ([]store.Snapshot, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	args := pgx.NamedArgs{}
	cond := listed(sc, "tenant_id", args)
	if q.SandboxID != "" {
		cond += " AND sandbox_id = @sandbox"
		args["sandbox"] = q.SandboxID
	}
	rows, err := s.pool.Query(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE true`+cond+` ORDER BY created_at DESC, id DESC`, args)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Snapshot, error) { return scanSnapshot(r) })
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	return out, nil
}

// DeleteSnapshot implements store.Store.
func (s *Store) DeleteSnapshot(ctx context.Context, id string) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	args := pgx.NamedArgs{"id": id}
	cond := scoped(sc, "tenant_id", args)
	tag, err := s.pool.Exec(ctx, `DELETE FROM snapshots WHERE id = @id`+cond, args)
	return oneRow(tag.RowsAffected(), err, "delete snapshot "+id, store.SnapshotNotFound(id))
}

func scanSnapshot(row pgx.Row) (store.Snapshot, error) {
	var snap store.Snapshot
	err := row.Scan(&snap.ID, &snap.TenantID, &snap.SandboxID, &snap.Name, &snap.Template, &snap.Driver, &snap.Bytes,
		&snap.Files, &snap.PauseMS, &snap.CreatedAt)
	return snap, err
}
