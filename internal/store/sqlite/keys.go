package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

const keyCols = `id, tenant_id, name, role, prefix, hash, created_by, created_at, last_used_at`

// lookupKey reads a key by id with its tenant's state.
var lookupKey = `SELECT k.` + strings.ReplaceAll(keyCols, ", ", ", k.") + `, t.state
	FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.id = ?`

// CreateKey implements store.Store.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if err := store.PrepareKey(ctx, &k); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error { return insertKey(ctx, tx, k) })
}

// insertKey stores k below its creator's lineage. A creator that is not
// in the store was revoked while its request ran: the key is refused, so
// a revocation that has committed leaves no key made by what it revoked.
func insertKey(ctx context.Context, tx *sql.Tx, k store.Key) error {
	lineage := "/"
	if k.CreatedBy != "" {
		var above string
		err := tx.QueryRowContext(ctx, `SELECT lineage FROM api_keys WHERE id = ?`, k.CreatedBy).Scan(&above)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("create key %s: %w", k.ID, store.CreatorRevoked())
		case err != nil:
			return fmt.Errorf("create key %s: read its creator: %w", k.ID, err)
		}
		lineage = above + k.CreatedBy + "/"
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (`+keyCols+`, lineage) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.TenantID, k.Name, k.Role, k.Prefix, k.Hash, k.CreatedBy, formatTime(k.CreatedAt), formatTimePtr(k.LastUsedAt), lineage)
	switch {
	case isUnique(err):
		return fmt.Errorf("create key %s: %w", k.ID, store.KeyExists(k.ID))
	case isForeignKey(err):
		return fmt.Errorf("create key %s: %w", k.ID, store.TenantNotFound(k.TenantID))
	case err != nil:
		return fmt.Errorf("create key %s: %w", k.ID, err)
	}
	return nil
}

// ListKeys implements store.Store.
func (s *Store) ListKeys(ctx context.Context) ([]store.Key, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	cond, args := listed(sc, "tenant_id")
	rows, err := s.reads.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE 1 = 1`+cond+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var ks []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		ks = append(ks, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return ks, nil
}

// DeleteKey implements store.Store. The key's descendants are the keys
// whose lineage names it; an admin's (or the system's) reach other tenants,
// anyone else's stay in the caller's tenant.
func (s *Store) DeleteKey(ctx context.Context, id string, cascade bool) ([]string, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	cond, args := scoped(sc, "tenant_id")
	var deleted []string
	err = s.write(ctx, func(tx *sql.Tx) error {
		var role string
		err := tx.QueryRowContext(ctx, `SELECT role FROM api_keys WHERE id = ?`+cond, append([]any{id}, args...)...).Scan(&role)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.KeyNotFound(id)
		case err != nil:
			return fmt.Errorf("delete key %s: %w", id, err)
		}
		doomed := []store.Key{{ID: id, Role: role}}
		if cascade {
			below := `instr(lineage, ?) > 0`
			belowArgs := []any{"/" + id + "/"}
			if !sc.Admin {
				below += cond
				belowArgs = append(belowArgs, args...)
			}
			more, err := keyRoles(ctx, tx, below, belowArgs)
			if err != nil {
				return fmt.Errorf("delete key %s: %w", id, err)
			}
			doomed = append(doomed, more...)
		}
		var admins int
		if deleted, admins, err = store.KeysDeleted(ctx, doomed); err != nil {
			return err
		}
		for _, k := range deleted {
			if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys WHERE id = ?`, k); err != nil {
				return fmt.Errorf("delete key %s: %w", k, err)
			}
		}
		if admins == 0 {
			return nil
		}
		var left int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE role = ?`, api.RoleAdmin).Scan(&left); err != nil {
			return fmt.Errorf("delete key %s: count admin keys: %w", id, err)
		}
		if left == 0 {
			return store.LastAdminKey()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// keyRoles returns the id and role of the keys that match where.
func keyRoles(ctx context.Context, tx *sql.Tx, where string, args []any) ([]store.Key, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, role FROM api_keys WHERE `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ks []store.Key
	for rows.Next() {
		var k store.Key
		if err := rows.Scan(&k.ID, &k.Role); err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	return ks, rows.Err()
}

// LookupKey implements store.Store: the key and its tenant's state in one
// read, since every request makes it.
func (s *Store) LookupKey(ctx context.Context, id string) (store.Key, error) {
	var k store.Key
	err := scanKeyInto(s.reads.QueryRowContext(ctx, lookupKey, id), &k, &k.TenantState)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Key{}, store.KeyNotFound(id)
	}
	if err != nil {
		return store.Key{}, fmt.Errorf("look up key %s: %w", id, err)
	}
	return k, nil
}

// TouchKey implements store.Store.
func (s *Store) TouchKey(ctx context.Context, id string, at time.Time) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	cond, args := scoped(sc, "tenant_id")
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ?`+cond,
			append([]any{formatTime(at), id}, args...)...)
		return oneRow(res, err, "touch key "+id, store.KeyNotFound(id))
	})
}

// oneRow checks that a statement changed a row, answering notFound if not.
func oneRow(res sql.Result, err error, what string, notFound error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return notFound
	}
	return nil
}

func scanKey(row scanner) (store.Key, error) {
	var k store.Key
	err := scanKeyInto(row, &k)
	return k, err
}

// scanKeyInto reads keyCols into k, then the columns after them into
// more.
func scanKeyInto(row scanner, k *store.Key, more ...any) error {
	var (
		created  string
		lastUsed sql.NullString
	)
	if err := row.Scan(append([]any{&k.ID, &k.TenantID, &k.Name, &k.Role, &k.Prefix, &k.Hash, &k.CreatedBy, &created, &lastUsed}, more...)...); err != nil {
		return err
	}
	var err error
	if k.CreatedAt, err = parseTime(created); err != nil {
		return err
	}
	k.LastUsedAt, err = parseTimePtr(lastUsed)
	return err
}
