package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// CreateTenant implements store.Store.
func (s *Store) CreateTenant(ctx context.Context, t store.Tenant, keys ...store.Key) error {
	if err := store.PrepareTenant(ctx, &t, keys); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		args := append([]any{t.ID, t.Name, t.CreatedAt, t.State}, quotaArgs(&t.Quotas)...)
		if _, err := tx.Exec(ctx, `INSERT INTO tenants (id, name, created_at, state, `+quotaColumns+`)
			VALUES (`+placeholders(1, len(args))+`)`, args...); err != nil {
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
	t, err := getTenant(ctx, s.pool, id, "")
	if err != nil {
		return store.Tenant{}, err
	}
	return t, nil
}

// getTenant reads a tenant, with lock ("" or a locking clause such as
// FOR NO KEY UPDATE).
func getTenant(ctx context.Context, q querier, id, lock string) (store.Tenant, error) {
	t, err := scanTenant(q.QueryRow(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = $1 `+lock, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := s.pool.Query(ctx, `SELECT `+tenantColumns+` FROM tenants ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Tenant, error) { return scanTenant(r) })
	if err != nil {
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
	err = s.write(ctx, func(tx pgx.Tx) error {
		args := append([]any{id}, quotaArgs(&q)...)
		t, err = scanTenant(tx.QueryRow(ctx, `UPDATE tenants SET (`+quotaColumns+`) = (`+placeholders(2, len(args)-1)+`)
			WHERE id = $1 RETURNING `+tenantColumns, args...))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.TenantNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("set quotas of tenant %s: %w", id, err)
		}
		return nil
	})
	return t, err
}

// UpdateTenant implements store.Store. The tenant's row is locked from
// the read to the commit, so updates of one tenant, in any process, run
// one after another; the lock also waits for the inserts into the
// tenant in flight (migration 0001's trigger).
func (s *Store) UpdateTenant(ctx context.Context, id string, fn func(*store.Tenant) error) (store.Tenant, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.Tenant{}, err
	}
	if !sc.All && !sc.Admin {
		return store.Tenant{}, store.AdminRequired()
	}
	var t store.Tenant
	err = s.write(ctx, func(tx pgx.Tx) error {
		var err error
		if t, err = getTenant(ctx, tx, id, "FOR NO KEY UPDATE"); err != nil {
			return err
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
		deletion, err := jsonArg(t.Deletion)
		if err != nil {
			return fmt.Errorf("update tenant %s: %w", id, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE tenants SET state = $1, deletion = $2 WHERE id = $3`, t.State, deletion, id); err != nil {
			return fmt.Errorf("update tenant %s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return store.Tenant{}, err
	}
	return t, nil
}

// The columns of a tenant, as scanTenant reads them: its state and
// deletion record, then its quotas: quota_cpu and one column per
// store.QuotaCounts, named after it.
var (
	quotaColumns = func() string {
		cols := []string{"quota_cpu"}
		for _, f := range store.QuotaCounts(&api.Quotas{}) {
			cols = append(cols, "quota_"+f.Name)
		}
		return strings.Join(cols, ", ")
	}()
	tenantColumns = `id, name, created_at, state, deletion, ` + quotaColumns
)

// quotaArgs are q's values in the order of quotaColumns.
func quotaArgs(q *api.Quotas) []any {
	args := []any{q.CPU}
	for _, f := range store.QuotaCounts(q) {
		args = append(args, *f.Value)
	}
	return args
}

// placeholders is "$from, …" for n arguments.
func placeholders(from, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = "$" + strconv.Itoa(from+i)
	}
	return strings.Join(ps, ", ")
}

func scanTenant(row pgx.Row) (store.Tenant, error) {
	var (
		t        store.Tenant
		deletion []byte
	)
	dest := []any{&t.ID, &t.Name, &t.CreatedAt, &t.State, &deletion, &t.Quotas.CPU}
	for _, f := range store.QuotaCounts(&t.Quotas) {
		dest = append(dest, f.Value)
	}
	if err := row.Scan(dest...); err != nil {
		return store.Tenant{}, err
	}
	if deletion != nil {
		t.Deletion = new(api.TenantDeletion)
		if err := decodeJSON(deletion, t.Deletion, "tenant deletion"); err != nil {
			return store.Tenant{}, err
		}
	}
	return t, nil
}
