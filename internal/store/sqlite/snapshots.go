package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/internal/store"
)

const snapshotCols = `id, tenant_id, sandbox_id, name, template, driver, bytes, files, pause_ms, created_at`

// CreateSnapshot implements store.Store.
func (s *Store) CreateSnapshot(ctx context.Context, snap *store.Snapshot) error {
	if err := store.PrepareSnapshot(ctx, snap); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO snapshots (`+snapshotCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			snap.ID, snap.TenantID, snap.SandboxID, snap.Name, snap.Template, snap.Driver, snap.Bytes, snap.Files, snap.PauseMS,
			formatTime(snap.CreatedAt))
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
	cond, args := scoped(sc, "tenant_id")
	snap, err := scanSnapshot(s.reads.QueryRowContext(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE id = ?`+cond,
		append([]any{id}, args...)...))
	if errors.Is(err, sql.ErrNoRows) {
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
	cond, args := listed(sc, "tenant_id")
	if q.SandboxID != "" {
		cond += " AND sandbox_id = ?"
		args = append(args, q.SandboxID)
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE 1 = 1`+cond+` ORDER BY created_at DESC, id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	defer rows.Close()
	var out []store.Snapshot
	for rows.Next() {
		snap, err := scanSnapshot(rows)
		if err != nil {
			return nil, fmt.Errorf("list snapshots: %w", err)
		}
		out = append(out, snap)
	}
	if err := rows.Err(); err != nil {
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
	cond, args := scoped(sc, "tenant_id")
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE id = ?`+cond, append([]any{id}, args...)...)
		return oneRow(res, err, "delete snapshot "+id, store.SnapshotNotFound(id))
	})
}

func scanSnapshot(row scanner) (store.Snapshot, error) {
	var (
		snap    store.Snapshot
		created string
	)
	if err := row.Scan(&snap.ID, &snap.TenantID, &snap.SandboxID, &snap.Name, &snap.Template, &snap.Driver, &snap.Bytes,
		&snap.Files, &snap.PauseMS, &created); err != nil {
		return store.Snapshot{}, err
	}
	var err error
	snap.CreatedAt, err = parseTime(created)
	return snap, err
}
