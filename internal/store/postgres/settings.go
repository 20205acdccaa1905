package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

// Settings implements store.Store.
func (s *Store) Settings(ctx context.Context) (map[string]json.RawMessage, error) {
	if err := store.CheckSettingsScope(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value::text FROM settings`)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	out := map[string]json.RawMessage{}
	var k, v string
	if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error { out[k] = json.RawMessage(v); return nil }); err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	return out, nil
}

// PutSettings implements store.Store.
func (s *Store) PutSettings(ctx context.Context, changes map[string]json.RawMessage) error {
	if err := store.CheckSettingsScope(ctx); err != nil {
		return err
	}
	if err := store.CheckSettingChanges(changes); err != nil {
		return err
	}
	now := store.Time(time.Now())
	return s.write(ctx, func(tx pgx.Tx) error {
		for k, v := range changes {
			if _, err := tx.Exec(ctx, `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2::text::json, $3)
				ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
				k, string(v), now); err != nil {
				return fmt.Errorf("write setting %s: %w", k, err)
			}
		}
		return nil
	})
}
