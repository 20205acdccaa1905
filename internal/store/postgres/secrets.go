package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

const secretCols = `id, tenant_id, name, description, kind, registry, value_bytes, key_id, nonce, ciphertext, created_at, updated_at`

// CreateSecret implements store.Store.
func (s *Store) CreateSecret(ctx context.Context, sec *store.Secret) error {
	if err := store.PrepareSecret(ctx, sec); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO secrets (`+secretCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			sec.ID, sec.TenantID, sec.Name, sec.Description, sec.Kind, sec.Registry, sec.ValueBytes, sec.KeyID, sec.Nonce, sec.Ciphertext,
			sec.CreatedAt, sec.UpdatedAt)
		switch {
		case isUnique(err):
			return fmt.Errorf("create secret %s: %w", sec.Name, store.SecretExists(sec.Name))
		case isForeignKey(err):
			return fmt.Errorf("create secret %s: %w", sec.Name, store.TenantNotFound(sec.TenantID))
		case err != nil:
			return fmt.Errorf("create secret %s: %w", sec.Name, err)
		}
		return nil
	})
}

// GetSecret implements store.Store.
func (s *Store) GetSecret(ctx context.Context, name string) (*store.Secret, error) {
	sc, err := store.NamedScope(ctx, "secrets")
	if err != nil {
		return nil, err
	}
	return getSecret(ctx, s.pool, sc.TenantID, name, "")
}

// getSecret reads a secret of tenantID, with lock ("" or a locking
// clause).
func getSecret(ctx context.Context, q querier, tenantID, name, lock string) (*store.Secret, error) {
	sec, err := scanSecret(q.QueryRow(ctx, `SELECT `+secretCols+` FROM secrets WHERE tenant_id = $1 AND name = $2 `+lock,
		tenantID, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.SecretNotFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	return &sec, nil
}

// ListSecrets implements store.Store.
func (s *Store) ListSecrets(ctx context.Context) ([]store.Secret, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	args := pgx.NamedArgs{}
	cond := listed(sc, "tenant_id", args)
	rows, err := s.pool.Query(ctx, `SELECT `+secretCols+` FROM secrets WHERE true`+cond+` ORDER BY tenant_id, name`, args)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Secret, error) { return scanSecret(r) })
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out, nil
}

// UpdateSecret implements store.Store. The row is locked from the read
// to the commit.
func (s *Store) UpdateSecret(ctx context.Context, name string, fn func(*store.Secret) error) (*store.Secret, error) {
	sc, err := store.NamedScope(ctx, "secrets")
	if err != nil {
		return nil, err
	}
	var out *store.Secret
	err = s.write(ctx, func(tx pgx.Tx) error {
		sec, err := getSecret(ctx, tx, sc.TenantID, name, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		before := *sec
		if err := fn(sec); err != nil {
			return err
		}
		if err := store.UpdatedSecret(&before, sec); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE secrets SET description = $1, value_bytes = $2, key_id = $3, nonce = $4,
				ciphertext = $5, updated_at = $6
			WHERE id = $7`,
			sec.Description, sec.ValueBytes, sec.KeyID, sec.Nonce, sec.Ciphertext, sec.UpdatedAt, sec.ID); err != nil {
			return fmt.Errorf("update secret %s: %w", name, err)
		}
		out = sec
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteSecret implements store.Store.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	sc, err := store.NamedScope(ctx, "secrets")
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM secrets WHERE tenant_id = $1 AND name = $2`, sc.TenantID, name)
	return oneRow(tag.RowsAffected(), err, "delete secret "+name, store.SecretNotFound(name))
}

// SecretKeyIDs implements store.Store.
func (s *Store) SecretKeyIDs(ctx context.Context) (map[string]int, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT key_id, count(*) FROM secrets GROUP BY key_id`)
	if err != nil {
		return nil, fmt.Errorf("count secrets by key: %w", err)
	}
	out := make(map[string]int)
	var (
		id string
		n  int
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil }); err != nil {
		return nil, fmt.Errorf("count secrets by key: %w", err)
	}
	return out, nil
}

func scanSecret(row pgx.Row) (store.Secret, error) {
	var sec store.Secret
	err := row.Scan(&sec.ID, &sec.TenantID, &sec.Name, &sec.Description, &sec.Kind, &sec.Registry, &sec.ValueBytes, &sec.KeyID,
		&sec.Nonce, &sec.Ciphertext, &sec.CreatedAt, &sec.UpdatedAt)
	return sec, err
}
