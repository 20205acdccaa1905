package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/internal/errdefs"
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
		if _, err := tx.ExecContext(ctx, `INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)`,
			t.ID, t.Name, formatTime(t.CreatedAt)); err != nil {
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
	t, err := scanTenant(s.r.QueryRowContext(ctx, `SELECT id, name, created_at FROM tenants WHERE id = ?`, id))
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
	rows, err := s.r.QueryContext(ctx, `SELECT id, name, created_at FROM tenants ORDER BY created_at, id`)
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

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

func scanTenant(row scanner) (store.Tenant, error) {
	var (
		t       store.Tenant
		created string
	)
	if err := row.Scan(&t.ID, &t.Name, &created); err != nil {
		return store.Tenant{}, err
	}
	var err error
	t.CreatedAt, err = parseTime(created)
	return t, err
}
