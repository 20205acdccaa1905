package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

const volumeCols = `id, tenant_id, name, size_mb, size_enforced, created_at, node`

// CreateVolume implements store.Store.
func (s *Store) CreateVolume(ctx context.Context, v *store.Volume) error {
	if err := store.PrepareVolume(ctx, v); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO volumes (`+volumeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			v.ID, v.TenantID, v.Name, v.SizeMB, v.SizeEnforced, v.CreatedAt, v.Node)
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
	return getVolume(ctx, s.pool, sc.TenantID, name)
}

func getVolume(ctx context.Context, q querier, tenantID, name string) (*store.Volume, error) {
	v, err := scanVolume(q.QueryRow(ctx, `SELECT `+volumeCols+` FROM volumes WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := s.pool.Query(ctx, `SELECT `+volumeCols+` FROM volumes WHERE tenant_id = $1 ORDER BY name`, sc.TenantID)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Volume, error) { return scanVolume(r) })
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	return out, nil
}

// DeleteVolume implements store.Store. It locks the tenant's row first,
// as DeleteTemplate does, so no sandbox that mounts the volume is being
// inserted meanwhile.
func (s *Store) DeleteVolume(ctx context.Context, name string) (*store.Volume, error) {
	sc, err := store.NamedScope(ctx, "volumes")
	if err != nil {
		return nil, err
	}
	mount, err := json.Marshal([]map[string]string{{"name": name}})
	if err != nil {
		return nil, err
	}
	var out *store.Volume
	err = s.write(ctx, func(tx pgx.Tx) error {
		if _, err := getTenant(ctx, tx, sc.TenantID, "FOR NO KEY UPDATE"); err != nil {
			return fmt.Errorf("delete volume %s: %w", name, err)
		}
		v, err := getVolume(ctx, tx, sc.TenantID, name)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM sandboxes
				WHERE tenant_id = $1 AND state <> $2 AND volumes @> $3`,
			sc.TenantID, api.StateDestroyed, mount).Scan(&n); err != nil {
			return fmt.Errorf("delete volume %s: %w", name, err)
		}
		if n > 0 {
			return store.VolumeInUse(name, n)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM volumes WHERE id = $1`, v.ID)
		if err := oneRow(tag.RowsAffected(), err, "delete volume "+name, store.VolumeNotFound(name)); err != nil {
			return err
		}
		out = v
		return nil
	})
	return out, err
}

func scanVolume(row pgx.Row) (store.Volume, error) {
	var v store.Volume
	err := row.Scan(&v.ID, &v.TenantID, &v.Name, &v.SizeMB, &v.SizeEnforced, &v.CreatedAt, &v.Node)
	return v, err
}
