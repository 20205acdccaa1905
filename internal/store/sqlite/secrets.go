package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/internal/store"
)

const secretCols = `id, tenant_id, name, description, kind, registry, value_bytes, key_id, nonce, ciphertext, created_at, updated_at`

// CreateSecret implements store.Store.
func (s *Store) CreateSecret(ctx context.Context, sec *store.Secret) error {
	if err := store.PrepareSecret(ctx, sec); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO secrets (`+secretCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sec.ID, sec.TenantID, sec.Name, sec.Description, sec.Kind, sec.Registry, sec.ValueBytes, sec.KeyID, sec.Nonce, sec.Ciphertext,
			formatTime(sec.CreatedAt), formatTime(sec.UpdatedAt))
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
	return getSecret(ctx, s.r, sc.TenantID, name)
}

func getSecret(ctx context.Context, q querier, tenantID, name string) (*store.Secret, error) {
	sec, err := scanSecret(q.QueryRowContext(ctx, `SELECT `+secretCols+` FROM secrets WHERE tenant_id = ? AND name = ?`,
		tenantID, name))
	if errors.Is(err, sql.ErrNoRows) {
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
	cond, args := listed(sc, "tenant_id")
	rows, err := s.reads.QueryContext(ctx, `SELECT `+secretCols+` FROM secrets WHERE 1 = 1`+cond+` ORDER BY tenant_id, name`, args...)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	defer rows.Close()
	var out []store.Secret
	for rows.Next() {
		sec, err := scanSecret(rows)
		if err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		out = append(out, sec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out, nil
}

// UpdateSecret implements store.Store.
func (s *Store) UpdateSecret(ctx context.Context, name string, fn func(*store.Secret) error) (*store.Secret, error) {
	sc, err := store.NamedScope(ctx, "secrets")
	if err != nil {
		return nil, err
	}
	var out *store.Secret
	err = s.write(ctx, func(tx *sql.Tx) error {
		sec, err := getSecret(ctx, tx, sc.TenantID, name)
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
		if _, err := tx.ExecContext(ctx, `UPDATE secrets SET description = ?, value_bytes = ?, key_id = ?, nonce = ?,
				ciphertext = ?, updated_at = ?
			WHERE id = ?`,
			sec.Description, sec.ValueBytes, sec.KeyID, sec.Nonce, sec.Ciphertext, formatTime(sec.UpdatedAt), sec.ID); err != nil {
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
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM secrets WHERE tenant_id = ? AND name = ?`, sc.TenantID, name)
		return oneRow(res, err, "delete secret "+name, store.SecretNotFound(name))
	})
}

// SecretKeyIDs implements store.Store.
func (s *Store) SecretKeyIDs(ctx context.Context) (map[string]int, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All {
		return nil, store.SystemOnly()
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT key_id, count(*) FROM secrets GROUP BY key_id`)
	if err != nil {
		return nil, fmt.Errorf("count secrets by key: %w", err)
	}
	defer rows.Close()
	out := make(map[string]int)
	for rows.Next() {
		var (
			id string
			n  int
		)
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("count secrets by key: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count secrets by key: %w", err)
	}
	return out, nil
}

func scanSecret(row scanner) (store.Secret, error) {
	var (
		sec              store.Secret
		created, updated string
	)
	if err := row.Scan(&sec.ID, &sec.TenantID, &sec.Name, &sec.Description, &sec.Kind, &sec.Registry, &sec.ValueBytes, &sec.KeyID,
		&sec.Nonce, &sec.Ciphertext, &created, &updated); err != nil {
		return store.Secret{}, err
	}
	var err error
	if sec.CreatedAt, err = parseTime(created); err != nil {
		return store.Secret{}, err
	}
	if sec.UpdatedAt, err = parseTime(updated); err != nil {
		return store.Secret{}, err
	}
	return sec, nil
}
