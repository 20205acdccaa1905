package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

const keyCols = `id, tenant_id, name, role, prefix, hash, created_by, created_at, last_used_at`

// lookupKey reads a key by id with its tenant's state.
var lookupKey = `SELECT k.` + strings.ReplaceAll(keyCols, ", ", ", k.") + `, t.state
	FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.id = $1`

// CreateKey implements store.Store.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if err := store.PrepareKey(ctx, &k); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error { return insertKey(ctx, tx, k) })
}

// insertKey stores k below its creator's lineage. A creator that is not
// in the store was revoked while its request ran: the key is refused, so
// a revocation that has committed leaves no key made by what it revoked.
// Under keysLock, so a revocation in another process is wholly before or
// after.
func insertKey(ctx context.Context, tx pgx.Tx, k store.Key) error {
	lineage := "/"
	if k.CreatedBy != "" {
		if err := lock(ctx, tx, keysLock, ""); err != nil {
			return err
		}
		var above string
		err := tx.QueryRow(ctx, `SELECT lineage FROM api_keys WHERE id = $1`, k.CreatedBy).Scan(&above)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("create key %s: %w", k.ID, store.CreatorRevoked())
		case err != nil:
			return fmt.Errorf("create key %s: read its creator: %w", k.ID, err)
		}
		lineage = above + k.CreatedBy + "/"
	}
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (`+keyCols+`, lineage) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		k.ID, k.TenantID, k.Name, k.Role, k.Prefix, k.Hash, k.CreatedBy, k.CreatedAt, k.LastUsedAt, lineage)
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
	args := pgx.NamedArgs{}
	cond := listed(sc, "tenant_id", args)
	rows, err := s.pool.Query(ctx, `SELECT `+keyCols+` FROM api_keys WHERE true`+cond+` ORDER BY created_at, id`, args)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	ks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Key, error) {
		var k store.Key
		return k, scanKeyInto(r, &k)
	})
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return ks, nil
}

// DeleteKey implements store.Store. The key's descendants are the keys
// whose lineage names it; an admin's (or the system's) reach other
// tenants, anyone else's stay in the caller's tenant. Under keysLock: a
// key its cascade would reach is not being created meanwhile, and two
// revocations never each leave the admin key the other deletes.
func (s *Store) DeleteKey(ctx context.Context, id string, cascade bool) ([]string, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	var deleted []string
	err = s.write(ctx, func(tx pgx.Tx) error {
		if err := lock(ctx, tx, keysLock, ""); err != nil {
			return err
		}
		args := pgx.NamedArgs{"id": id}
		cond := scoped(sc, "tenant_id", args)
		var role string
		err := tx.QueryRow(ctx, `SELECT role FROM api_keys WHERE id = @id`+cond, args).Scan(&role)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return store.KeyNotFound(id)
		case err != nil:
			return fmt.Errorf("delete key %s: %w", id, err)
		}
		doomed := []store.Key{{ID: id, Role: role}}
		if cascade {
			below := pgx.NamedArgs{"path": "/" + id + "/"}
			where := `strpos(lineage, @path) > 0`
			if !sc.Admin {
				where += scoped(sc, "tenant_id", below)
			}
			rows, err := tx.Query(ctx, `SELECT id, role FROM api_keys WHERE `+where+` ORDER BY created_at, id`, below)
			if err != nil {
				return fmt.Errorf("delete key %s: %w", id, err)
			}
			more, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Key, error) {
				var k store.Key
				return k, r.Scan(&k.ID, &k.Role)
			})
			if err != nil {
				return fmt.Errorf("delete key %s: %w", id, err)
			}
			doomed = append(doomed, more...)
		}
		var admins int
		if deleted, admins, err = store.KeysDeleted(ctx, doomed); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE id = ANY($1)`, deleted); err != nil {
			return fmt.Errorf("delete key %s: %w", id, err)
		}
		if admins == 0 {
			return nil
		}
		var left bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE role = $1)`, api.RoleAdmin).Scan(&left); err != nil {
			return fmt.Errorf("delete key %s: count admin keys: %w", id, err)
		}
		if !left {
			return store.LastAdminKey()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// LookupKey implements store.Store: the key and its tenant's state in one
// read, since every request makes it.
func (s *Store) LookupKey(ctx context.Context, id string) (store.Key, error) {
	var k store.Key
	err := scanKeyInto(s.pool.QueryRow(ctx, lookupKey, id), &k, &k.TenantState)
	if errors.Is(err, pgx.ErrNoRows) {
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
	args := pgx.NamedArgs{"id": id, "at": store.Time(at)}
	cond := scoped(sc, "tenant_id", args)
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = @at WHERE id = @id`+cond, args)
	return oneRow(tag.RowsAffected(), err, "touch key "+id, store.KeyNotFound(id))
}

// oneRow checks that a statement changed a row, answering notFound if not.
func oneRow(n int64, err error, what string, notFound error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// scanKeyInto reads keyCols into k, then the columns after them into
// more.
func scanKeyInto(row pgx.Row, k *store.Key, more ...any) error {
	return row.Scan(append([]any{&k.ID, &k.TenantID, &k.Name, &k.Role, &k.Prefix, &k.Hash, &k.CreatedBy, &k.CreatedAt, &k.LastUsedAt}, more...)...)
}
