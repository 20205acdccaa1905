package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// Settings implements store.Store.
func (s *Store) Settings(ctx context.Context) (map[string]json.RawMessage, error) {
	if err := store.CheckSettingsScope(ctx); err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT key, value FROM settings`)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("read settings: %w", err)
		}
		out[k] = json.RawMessage(v)
	}
	if err := rows.Err(); err != nil {
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
	now := formatTime(time.Now())
	return s.write(ctx, func(tx *sql.Tx) error {
		for k, v := range changes {
			if _, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
				ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
				k, string(v), now); err != nil {
				return fmt.Errorf("write setting %s: %w", k, err)
			}
		}
		return nil
	})
}
