package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

const volumeCols = `id, tenant_id, name, size_mb, size_enforced, created_at, node`

// CreateVolume implements store.Store.
func (s *Store) CreateVolume(ctx context.Context, v *store.Volume) error {
	if err := store.PrepareVolume(ctx, v); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO volumes (`+volumeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			v.ID, v.TenantID, v.Name, v.SizeMB, v.SizeEnforced, formatTime(v.CreatedAt), v.Node)
		switch {
		case isUnique(err):
			return fmt.Errorf("create volume %s: %w", v.Name, store.VolumeExists(v.Name))
		case isForeignKey(err):
			return fmt.Errorf("create volume %s: %w", v.Name, store.TenantNotFound(v.TenantID))
		case err != nil:
			return fmt.Errorf("create volume %s: %w", v.Name, err)
		}
		return nil
	})
}

// GetVolume implements store.Store.
func (s *Store) GetVolume(ctx context.Context, name string) (*store.Volume, error) {
	sc, err := store.NamedScope(ctx, "volumes")
	if err != nil {
		return nil, err
	}
	return getVolume(ctx, s.reads, sc.TenantID, name)
}

func getVolume(ctx context.Context, q querier, tenantID, name string) (*store.Volume, error) {
	v, err := scanVolume(q.QueryRowContext(ctx, `SELECT `+volumeCols+` FROM volumes WHERE tenant_id = ? AND name = ?`, tenantID, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.VolumeNotFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get volume %s: %w", name, err)
	}
	return &v, nil
}

// ListVolumes implements store.Store.
func (s *Store) ListVolumes(ctx context.Context) ([]store.Volume, error) {
	sc, err := store.NamedScope(ctx, "volumes")
	if err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT `+volumeCols+` FROM volumes WHERE tenant_id = ? ORDER BY name`, sc.TenantID)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	defer rows.Close()
	var out []store.Volume
	for rows.Next() {
		v, err := scanVolume(rows)
		if err != nil {
			return nil, fmt.Errorf("list volumes: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	return out, nil
}

// DeleteVolume implements store.Store.
func (s *Store) DeleteVolume(ctx context.Context, name string) (*store.Volume, error) {
	sc, err := store.NamedScope(ctx, "volumes")
	if err != nil {
		return nil, err
	}
	var out *store.Volume
	err = s.write(ctx, func(tx *sql.Tx) error {
		v, err := getVolume(ctx, tx, sc.TenantID, name)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sandboxes s
				WHERE s.tenant_id = ? AND s.state != ? AND s.volumes IS NOT NULL
				AND EXISTS (SELECT 1 FROM json_each(s.volumes) m WHERE json_extract(m.value, '$.name') = ?)`,
			sc.TenantID, api.StateDestroyed, name).Scan(&n); err != nil {
			return fmt.Errorf("delete volume %s: %w", name, err)
		}
		if n > 0 {
			return store.VolumeInUse(name, n)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM volumes WHERE id = ?`, v.ID)
		if err := oneRow(res, err, "delete volume "+name, store.VolumeNotFound(name)); err != nil {
			return err
		}
		out = v
		return nil
	})
	return out, err
}

func scanVolume(row scanner) (store.Volume, error) {
	var (
		v       store.Volume
		created string
	)
	if err := row.Scan(&v.ID, &v.TenantID, &v.Name, &v.SizeMB, &v.SizeEnforced, &created, &v.Node); err != nil {
		return store.Volume{}, err
	}
	var err error
	v.CreatedAt, err = parseTime(created)
	return v, err
}
