package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// CreateTenant implements store.Store.
func (s *Store) CreateTenant(ctx context.Context, t store.Tenant, keys ...store.Key) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All && !sc.Admin {
		return store.AdminRequired()
	}
	if err := store.CheckTenant(&t); err != nil {
		return err
	}
	if err := store.CheckQuotas(t.Quotas); err != nil {
		return err
	}
	for i := range keys {
		if keys[i].TenantID != t.ID {
			return errdefs.Invalid("invalid_key", "a new tenant's keys must belong to it")
		}
		if err := store.CheckKey(&keys[i]); err != nil {
			return err
		}
		if err := store.CheckKeyCreator(ctx, &keys[i]); err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		q := t.Quotas
		if _, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at, `+quotaColumns+`, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Name, formatTime(t.CreatedAt), q.Sandboxes, q.MemoryMB, q.CPU, q.Pids, q.DiskMB, t.State); err != nil {
			if isUnique(err) {
				return fmt.Errorf("create tenant %s: %w", t.ID, store.TenantExists(t.Name))
			}
			return fmt.Errorf("create tenant %s: %w", t.ID, err)
		}
		for _, k := range keys {
			if err := insertKey(ctx, tx, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// GetTenant implements store.Store.
func (s *Store) GetTenant(ctx context.Context, id string) (store.Tenant, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.Tenant{}, err
	}
	if !sc.Admin && !sc.Sees(id) {
		return store.Tenant{}, store.TenantNotFound(id)
	}
	t, err := scanTenant(s.reads.QueryRowContext(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Tenant{}, store.TenantNotFound(id)
	}
	if err != nil {
		return store.Tenant{}, fmt.Errorf("get tenant %s: %w", id, err)
	}
	return t, nil
}

// ListTenants implements store.Store.
func (s *Store) ListTenants(ctx context.Context) ([]store.Tenant, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All && !sc.Admin {
		return nil, store.AdminRequired()
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT `+tenantColumns+` FROM tenants ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	defer rows.Close()
	var ts []store.Tenant
	for rows.Next() {
		t, err := scanTenant(rows)
		if err != nil {
			return nil, fmt.Errorf("list tenants: %w", err)
		}
		ts = append(ts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return ts, nil
}

// SetTenantQuotas implements store.Store.
func (s *Store) SetTenantQuotas(ctx context.Context, id string, q api.Quotas) (store.Tenant, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.Tenant{}, err
	}
	if !sc.All && !sc.Admin {
		return store.Tenant{}, store.AdminRequired()
	}
	if err := store.CheckQuotas(q); err != nil {
		return store.Tenant{}, err
	}
	var t store.Tenant
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tenants SET quota_sandboxes = ?, quota_memory_mb = ?, quota_cpu = ?, quota_pids = ?, quota_disk_mb = ? WHERE id = ?`,
			q.Sandboxes, q.MemoryMB, q.CPU, q.Pids, q.DiskMB, id)
		if err != nil {
			return fmt.Errorf("set quotas of tenant %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("set quotas of tenant %s: %w", id, err)
		} else if n == 0 {
			return store.TenantNotFound(id)
		}
		t, err = scanTenant(tx.QueryRowContext(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = ?`, id))
		if err != nil {
			return fmt.Errorf("set quotas of tenant %s: %w", id, err)
		}
		return nil
	})
	return t, err
}

// UpdateTenant implements store.Store.
func (s *Store) UpdateTenant(ctx context.Context, id string, fn func(*store.Tenant) error) (store.Tenant, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.Tenant{}, err
	}
	if !sc.All && !sc.Admin {
		return store.Tenant{}, store.AdminRequired()
	}
	var t store.Tenant
	err = s.write(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = scanTenant(tx.QueryRowContext(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return store.TenantNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("update tenant %s: %w", id, err)
		}
		if err := fn(&t); err != nil {
			return err
		}
		if err := store.CheckTenantState(t.State); err != nil {
			return err
		}
		if d := t.Deletion; d != nil {
			d.StartedAt, d.FinishedAt = store.Time(d.StartedAt), store.TimePtr(d.FinishedAt)
		}
		deletion, err := encodeJSON(t.Deletion)
		if err != nil {
			return fmt.Errorf("update tenant %s: %w", id, err)
		}
		_, err = tx.ExecContext(ctx, `UPDATE tenants SET state = ?, deletion = ? WHERE id = ?`, t.State, deletion, id)
		if err != nil {
			return fmt.Errorf("update tenant %s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return store.Tenant{}, err
	}
	return t, nil
}

// The columns of a tenant, as scanTenant reads them.
const (
	quotaColumns  = `quota_sandboxes, quota_memory_mb, quota_cpu, quota_pids, quota_disk_mb`
	tenantColumns = `id, name, created_at, ` + quotaColumns + `, state, deletion`
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

func scanTenant(row scanner) (store.Tenant, error) {
	var (
		t                          store.Tenant
		created                    string
		sandboxes, mem, pids, disk sql.NullInt64
		cpu                        sql.NullFloat64
		deletion                   sql.NullString
	)
	if err := row.Scan(&t.ID, &t.Name, &created, &sandboxes, &mem, &cpu, &pids, &disk, &t.State, &deletion); err != nil {
		return store.Tenant{}, err
	}
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return store.Tenant{}, err
	}
	t.Quotas = api.Quotas{Sandboxes: nullInt(sandboxes), MemoryMB: nullInt(mem), CPU: nullFloat(cpu), Pids: nullInt(pids), DiskMB: nullInt(disk)}
	if deletion.Valid {
		t.Deletion = new(api.TenantDeletion)
		if err := json.Unmarshal([]byte(deletion.String), t.Deletion); err != nil {
			return store.Tenant{}, fmt.Errorf("stored tenant deletion: %w", err)
		}
	}
	return t, nil
}

// nullInt is an optional INTEGER column.
func nullInt(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	n := int(v.Int64)
	return &n
}

// nullFloat is an optional REAL column.
func nullFloat(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}
