package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

const templateCols = `id, tenant_id, name, source, digest, config, layers, bytes, flat, created_at, base, node`

// CreateTemplate implements store.Store.
func (s *Store) CreateTemplate(ctx context.Context, t *store.Template) error {
	if err := store.PrepareTemplate(ctx, t); err != nil {
		return err
	}
	config, err := json.Marshal(t.Config)
	if err != nil {
		return err
	}
	layers, err := json.Marshal(t.Layers)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO templates (`+templateCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			t.ID, t.TenantID, t.Name, t.Source, t.Digest, config, layers, t.Bytes, t.Flat, t.CreatedAt, t.Base, t.Node)
		switch {
		case isUnique(err):
			return fmt.Errorf("create template %s: %w", t.Name, store.TemplateExists(t.Name))
		case isForeignKey(err):
			return fmt.Errorf("create template %s: %w", t.Name, store.TenantNotFound(t.TenantID))
		case err != nil:
			return fmt.Errorf("create template %s: %w", t.Name, err)
		}
		return nil
	})
}

// GetTemplate implements store.Store.
func (s *Store) GetTemplate(ctx context.Context, name string) (*store.Template, error) {
	sc, err := store.NamedScope(ctx, "templates")
	if err != nil {
		return nil, err
	}
	t, err := scanTemplate(s.pool.QueryRow(ctx, `SELECT `+templateCols+` FROM templates WHERE tenant_id = $1 AND name = $2`,
		sc.TenantID, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.TemplateNotFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get template %s: %w", name, err)
	}
	return &t, nil
}

// ListTemplates implements store.Store.
func (s *Store) ListTemplates(ctx context.Context) ([]store.Template, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	args := pgx.NamedArgs{}
	cond := listed(sc, "tenant_id", args)
	rows, err := s.pool.Query(ctx, `SELECT `+templateCols+` FROM templates WHERE true`+cond+` ORDER BY tenant_id, name`, args)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Template, error) { return scanTemplate(r) })
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	return out, nil
}

// DeleteTemplate implements store.Store. It locks the tenant's row
// first, which waits for the sandboxes and snapshots being inserted into
// the tenant (migration 0001's trigger) and makes those that come after
// wait for it: the count sees every one that committed before, and none
// is added until the delete is done.
func (s *Store) DeleteTemplate(ctx context.Context, name string) error {
	sc, err := store.NamedScope(ctx, "templates")
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := getTenant(ctx, tx, sc.TenantID, "FOR NO KEY UPDATE"); err != nil {
			return fmt.Errorf("delete template %s: %w", name, err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM sandboxes WHERE tenant_id = $1 AND template = $2 AND state <> $3)
				+ (SELECT count(*) FROM snapshots WHERE tenant_id = $1 AND template = $2)`,
			sc.TenantID, name, api.StateDestroyed).Scan(&n); err != nil {
			return fmt.Errorf("delete template %s: %w", name, err)
		}
		if n > 0 {
			return store.TemplateInUse(name, n)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM templates WHERE tenant_id = $1 AND name = $2`, sc.TenantID, name)
		return oneRow(tag.RowsAffected(), err, "delete template "+name, store.TemplateNotFound(name))
	})
}

func scanTemplate(row pgx.Row) (store.Template, error) {
	var (
		t              store.Template
		config, layers []byte
	)
	if err := row.Scan(&t.ID, &t.TenantID, &t.Name, &t.Source, &t.Digest, &config, &layers, &t.Bytes, &t.Flat, &t.CreatedAt, &t.Base, &t.Node); err != nil {
		return store.Template{}, err
	}
	if err := decodeJSON(config, &t.Config, "template config"); err != nil {
		return store.Template{}, err
	}
	if err := decodeJSON(layers, &t.Layers, "template layers"); err != nil {
		return store.Template{}, err
	}
	return t, nil
}
