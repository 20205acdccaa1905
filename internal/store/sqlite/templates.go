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
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO templates (`+templateCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.TenantID, t.Name, t.Source, t.Digest, string(config), string(layers), t.Bytes, t.Flat, formatTime(t.CreatedAt), t.Base, t.Node)
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
	t, err := scanTemplate(s.r.QueryRowContext(ctx, `SELECT `+templateCols+` FROM templates WHERE tenant_id = ? AND name = ?`,
		sc.TenantID, name))
	if errors.Is(err, sql.ErrNoRows) {
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
	cond, args := listed(sc, "tenant_id")
	rows, err := s.r.QueryContext(ctx, `SELECT `+templateCols+` FROM templates WHERE 1 = 1`+cond+` ORDER BY tenant_id, name`, args...)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	defer rows.Close()
	var out []store.Template
	for rows.Next() {
		t, err := scanTemplate(rows)
		if err != nil {
			return nil, fmt.Errorf("list templates: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	return out, nil
}

// DeleteTemplate implements store.Store.
func (s *Store) DeleteTemplate(ctx context.Context, name string) error {
	sc, err := store.NamedScope(ctx, "templates")
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM sandboxes WHERE tenant_id = ?1 AND template = ?2 AND state != ?3)
				+ (SELECT count(*) FROM snapshots WHERE tenant_id = ?1 AND template = ?2)`,
			sc.TenantID, name, api.StateDestroyed).Scan(&n); err != nil {
			return fmt.Errorf("delete template %s: %w", name, err)
		}
		if n > 0 {
			return store.TemplateInUse(name, n)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM templates WHERE tenant_id = ? AND name = ?`, sc.TenantID, name)
		return oneRow(res, err, "delete template "+name, store.TemplateNotFound(name))
	})
}

func scanTemplate(row scanner) (store.Template, error) {
	var (
		t                       store.Template
		config, layers, created string
	)
	if err := row.Scan(&t.ID, &t.TenantID, &t.Name, &t.Source, &t.Digest, &config, &layers, &t.Bytes, &t.Flat, &created, &t.Base, &t.Node); err != nil {
		return store.Template{}, err
	}
	if err := json.Unmarshal([]byte(config), &t.Config); err != nil {
		return store.Template{}, fmt.Errorf("stored template config: %w", err)
	}
	if err := json.Unmarshal([]byte(layers), &t.Layers); err != nil {
		return store.Template{}, fmt.Errorf("stored template layers: %w", err)
	}
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return store.Template{}, err
	}
	return t, nil
}
