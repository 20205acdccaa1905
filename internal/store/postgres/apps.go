package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

var _ store.Apps = (*Store)(nil)

const appCols = `id, tenant_id, name, preset, template, public, state, error, live, dev, previous_live, generation, limits, created_at, updated_at`

// CreateApp implements store.Apps.
func (s *Store) CreateApp(ctx context.Context, a *store.App) error {
	if err := store.PrepareApp(ctx, a); err != nil {
		return err
	}
	limits, err := jsonArg(a.Limits)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO apps (`+appCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			a.ID, a.TenantID, a.Name, a.Preset, a.Template, a.Public, a.State, a.Error, a.Live, a.Dev, a.PreviousLive,
			a.Generation, limits, a.CreatedAt, a.UpdatedAt)
		switch {
		case isUnique(err):
			return fmt.Errorf("create app %s: %w", a.Name, store.AppExists(a.Name))
		case isForeignKey(err):
			return fmt.Errorf("create app %s: %w", a.Name, store.TenantNotFound(a.TenantID))
		case err != nil:
			return fmt.Errorf("create app %s: %w", a.Name, err)
		}
		return nil
	})
}

// GetApp implements store.Apps.
func (s *Store) GetApp(ctx context.Context, id string) (*store.App, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	return getApp(ctx, s.pool, sc, id, "")
}

// getApp reads an app sc sees, with lock ("" or a locking clause).
func getApp(ctx context.Context, q querier, sc store.Scope, id, lock string) (*store.App, error) {
	args := pgx.NamedArgs{"id": id}
	cond := scoped(sc, "tenant_id", args)
	a, err := scanApp(q.QueryRow(ctx, `SELECT `+appCols+` FROM apps WHERE id = @id`+cond+` `+lock, args))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.AppNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get app %s: %w", id, err)
	}
	return a, nil
}

// AppByName implements store.Apps.
func (s *Store) AppByName(ctx context.Context, name string) (*store.App, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	a, err := scanApp(s.pool.QueryRow(ctx, `SELECT `+appCols+` FROM apps WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.AppNotFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get app %s: %w", name, err)
	}
	return a, nil
}

// ListApps implements store.Apps.
func (s *Store) ListApps(ctx context.Context) ([]store.App, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	args := pgx.NamedArgs{}
	cond := listed(sc, "tenant_id", args)
	rows, err := s.pool.Query(ctx, `SELECT `+appCols+` FROM apps WHERE true`+cond+` ORDER BY name`, args)
	if err != nil {
		return nil, fmt.Errorf("list apps: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.App, error) {
		a, err := scanApp(r)
		if err != nil {
			return store.App{}, err
		}
		return *a, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list apps: %w", err)
	}
	return out, nil
}

// UpdateApp implements store.Apps. The row is locked from the read to
// the commit, so a swap of the pointers is conditional on what it read.
func (s *Store) UpdateApp(ctx context.Context, id string, fn func(*store.App) error) (*store.App, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	var out *store.App
	err = s.write(ctx, func(tx pgx.Tx) error {
		a, err := getApp(ctx, tx, sc, id, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		before := *a
		if err := fn(a); err != nil {
			return err
		}
		store.UpdatedApp(&before, a)
		limits, err := jsonArg(a.Limits)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE apps SET preset = $1, template = $2, public = $3, state = $4, error = $5, live = $6,
				dev = $7, previous_live = $8, generation = $9, limits = $10, updated_at = $11 WHERE id = $12`,
			a.Preset, a.Template, a.Public, a.State, a.Error, a.Live, a.Dev, a.PreviousLive, a.Generation, limits,
			a.UpdatedAt, a.ID); err != nil {
			return fmt.Errorf("update app %s: %w", id, err)
		}
		out = a
		return nil
	})
	return out, err
}

// DeleteApp implements store.Apps.
func (s *Store) DeleteApp(ctx context.Context, id string) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	args := pgx.NamedArgs{"id": id}
	cond := scoped(sc, "tenant_id", args)
	tag, err := s.pool.Exec(ctx, `DELETE FROM apps WHERE id = @id`+cond, args)
	return oneRow(tag.RowsAffected(), err, "delete app "+id, store.AppNotFound(id))
}

func scanApp(row pgx.Row) (*store.App, error) {
	var (
		a      store.App
		limits []byte
	)
	if err := row.Scan(&a.ID, &a.TenantID, &a.Name, &a.Preset, &a.Template, &a.Public, &a.State, &a.Error, &a.Live, &a.Dev,
		&a.PreviousLive, &a.Generation, &limits, &a.CreatedAt, &a.UpdatedAt); err != nil {
		return nil, err
	}
	if limits != nil {
		a.Limits = new(api.Limits)
		if err := decodeJSON(limits, a.Limits, "app limits"); err != nil {
			return nil, err
		}
	}
	return &a, nil
}

// lockApp checks that appID is an app the caller sees and locks its row
// until tx ends: what a write counts of the app (its config, its tasks)
// holds until it commits, in every process.
func lockApp(ctx context.Context, tx pgx.Tx, sc store.Scope, appID string) error {
	_, err := getApp(ctx, tx, sc, appID, "FOR NO KEY UPDATE")
	return err
}
