package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

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
	limits, err := encodeJSON(a.Limits)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO apps (`+appCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.TenantID, a.Name, a.Preset, a.Template, a.Public, a.State, a.Error, a.Live, a.Dev, a.PreviousLive,
			a.Generation, limits, formatTime(a.CreatedAt), formatTime(a.UpdatedAt))
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
	return getApp(ctx, s.reads, sc, id)
}

func getApp(ctx context.Context, q querier, sc store.Scope, id string) (*store.App, error) {
	cond, args := scoped(sc, "tenant_id")
	a, err := scanApp(q.QueryRowContext(ctx, `SELECT `+appCols+` FROM apps WHERE id = ?`+cond, append([]any{id}, args...)...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.AppNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get app %s: %w", id, err)
	}
	return a, nil
}

// AppByName implements store.Apps.
func (s *Store) AppByName(ctx context.Context, name string) (*store.App, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All {
		return nil, store.SystemOnly()
	}
	a, err := scanApp(s.reads.QueryRowContext(ctx, `SELECT `+appCols+` FROM apps WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
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
	cond, args := listed(sc, "tenant_id")
	rows, err := s.reads.QueryContext(ctx, `SELECT `+appCols+` FROM apps WHERE 1 = 1`+cond+` ORDER BY name`, args...)
	if err != nil {
		return nil, fmt.Errorf("list apps: %w", err)
	}
	defer rows.Close()
	var out []store.App
	for rows.Next() {
		a, err := scanApp(rows)
		if err != nil {
			return nil, fmt.Errorf("list apps: %w", err)
		}
		out = append(out, *a)
	}
	return out, rows.Err()
}

// UpdateApp implements store.Apps.
func (s *Store) UpdateApp(ctx context.Context, id string, fn func(*store.App) error) (*store.App, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	var out *store.App
	err = s.write(ctx, func(tx *sql.Tx) error {
		a, err := getApp(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		before := *a
		if err := fn(a); err != nil {
			return err
		}
		store.UpdatedApp(&before, a)
		limits, err := encodeJSON(a.Limits)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE apps SET preset = ?, template = ?, public = ?, state = ?, error = ?, live = ?,
				dev = ?, previous_live = ?, generation = ?, limits = ?, updated_at = ? WHERE id = ?`,
			a.Preset, a.Template, a.Public, a.State, a.Error, a.Live, a.Dev, a.PreviousLive, a.Generation, limits,
			formatTime(a.UpdatedAt), a.ID); err != nil {
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
	return s.write(ctx, func(tx *sql.Tx) error {
		cond, args := scoped(sc, "tenant_id")
		res, err := tx.ExecContext(ctx, `DELETE FROM apps WHERE id = ?`+cond, append([]any{id}, args...)...)
		if err != nil {
			return fmt.Errorf("delete app %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.AppNotFound(id)
		}
		return nil
	})
}

func scanApp(row scanner) (*store.App, error) {
	var (
		a                store.App
		limits           sql.NullString
		created, updated string
	)
	if err := row.Scan(&a.ID, &a.TenantID, &a.Name, &a.Preset, &a.Template, &a.Public, &a.State, &a.Error, &a.Live, &a.Dev,
		&a.PreviousLive, &a.Generation, &limits, &created, &updated); err != nil {
		return nil, err
	}
	if limits.Valid {
		a.Limits = new(api.Limits)
		if err := json.Unmarshal([]byte(limits.String), a.Limits); err != nil {
			return nil, fmt.Errorf("app limits: %w", err)
		}
	}
	var err error
	if a.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if a.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &a, nil
}

// encodeJSON is v as JSON, NULL for a nil pointer.
func encodeJSON[T any](v *T) (sql.NullString, error) {
	if v == nil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// appScoped checks that appID is an app the caller sees, inside tx.
func appScoped(ctx context.Context, tx querier, sc store.Scope, appID string) error {
	_, err := getApp(ctx, tx, sc, appID)
	return err
}
