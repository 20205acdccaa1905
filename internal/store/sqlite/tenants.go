package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// CreateTenant implements store.Store.
func (s *Store) CreateTenant(ctx context.Context, t store.Tenant, keys ...store.Key) error {
	if err := store.PrepareTenant(ctx, &t, keys); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		args := append([]any{t.ID, t.Name, formatTime(t.CreatedAt)}, quotaArgs(&t.Quotas)...)
		args = append(args, t.State)
		if _, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at, `+quotaColumns+`, state) VALUES (?, ?, ?`+strings.Repeat(", ?", len(args)-3)+`)`,
			args...); err != nil {
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
		res, err := tx.ExecContext(ctx, `UPDATE tenants SET (`+quotaColumns+`) = (?`+strings.Repeat(", ?", len(quotaArgs(&q))-1)+`) WHERE id = ?`,
			append(quotaArgs(&q), id)...)
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

// The columns of a tenant, as scanTenant reads them: its quotas are
// quota_cpu, then one column per store.QuotaCounts, named after it; then
// its state and deletion record.
var (
	quotaColumns = func() string {
		cols := []string{"quota_cpu"}
		for _, f := range store.QuotaCounts(&api.Quotas{}) {
			cols = append(cols, "quota_"+f.Name)
		}
		return strings.Join(cols, ", ")
	}()
	tenantColumns = `id, name, created_at, ` + quotaColumns + `, state, deletion`
)

// quotaArgs are q's values in the order of quotaColumns.
func quotaArgs(q *api.Quotas) []any {
	args := []any{q.CPU}
	for _, f := range store.QuotaCounts(q) {
		args = append(args, *f.Value)
	}
	return args
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

func scanTenant(row scanner) (store.Tenant, error) {
	var (
		t        store.Tenant
		created  string
		cpu      sql.NullFloat64
		deletion sql.NullString
	)
	counts := store.QuotaCounts(&t.Quotas)
	ns := make([]sql.NullInt64, len(counts))
	dest := []any{&t.ID, &t.Name, &created, &cpu}
	for i := range ns {
		dest = append(dest, &ns[i])
	}
	dest = append(dest, &t.State, &deletion)
	if err := row.Scan(dest...); err != nil {
		return store.Tenant{}, err
	}
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return store.Tenant{}, err
	}
	t.Quotas.CPU = nullFloat(cpu)
	for i, f := range counts {
		*f.Value = nullInt(ns[i])
	}
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
