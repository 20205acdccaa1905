package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

// PutAppConfig implements store.Apps.
func (s *Store) PutAppConfig(ctx context.Context, c *store.AppConfig) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	if err := store.CheckConfigKey(c.Key); err != nil {
		return err
	}
	now := store.Time(time.Now())
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := appScoped(ctx, tx, sc, c.AppID); err != nil {
			return err
		}
		var created sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT created_at FROM app_config WHERE app_id = ? AND key = ?`, c.AppID, c.Key).
			Scan(&created); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("put config %s: %w", c.Key, err)
		}
		c.CreatedAt, c.UpdatedAt = now, now
		if created.Valid {
			t, err := parseTime(created.String)
			if err != nil {
				return err
			}
			c.CreatedAt = t
		} else {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM app_config WHERE app_id = ?`, c.AppID).Scan(&n); err != nil {
				return fmt.Errorf("put config %s: %w", c.Key, err)
			}
			if n >= api.MaxAppConfig {
				return errdefs.Conflict("too_much_config", "an app holds at most %d config entries", api.MaxAppConfig)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO app_config (app_id, key, value, sensitive, key_id, nonce, ciphertext, access,
				created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value, sensitive = excluded.sensitive,
				key_id = excluded.key_id, nonce = excluded.nonce, ciphertext = excluded.ciphertext,
				access = excluded.access, updated_at = excluded.updated_at`,
			c.AppID, c.Key, c.Value, c.Sensitive, c.KeyID, c.Nonce, c.Ciphertext, c.Access, formatTime(c.CreatedAt), formatTime(c.UpdatedAt))
		if err != nil {
			return fmt.Errorf("put config %s: %w", c.Key, err)
		}
		return nil
	})
}

// ListAppConfig implements store.Apps.
func (s *Store) ListAppConfig(ctx context.Context, appID string) ([]store.AppConfig, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := appScoped(ctx, s.reads, sc, appID); err != nil {
		return nil, err
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT app_id, key, value, sensitive, key_id, nonce, ciphertext, access, created_at,
		updated_at FROM app_config WHERE app_id = ? ORDER BY key`, appID)
	if err != nil {
		return nil, fmt.Errorf("list config: %w", err)
	}
	defer rows.Close()
	var out []store.AppConfig
	for rows.Next() {
		var (
			c                store.AppConfig
			created, updated string
		)
		if err := rows.Scan(&c.AppID, &c.Key, &c.Value, &c.Sensitive, &c.KeyID, &c.Nonce, &c.Ciphertext, &c.Access, &created, &updated); err != nil {
			return nil, fmt.Errorf("list config: %w", err)
		}
		if c.CreatedAt, err = parseTime(created); err != nil {
			return nil, err
		}
		if c.UpdatedAt, err = parseTime(updated); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// DeleteAppConfig implements store.Apps.
func (s *Store) DeleteAppConfig(ctx context.Context, appID, key string) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := appScoped(ctx, tx, sc, appID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM app_config WHERE app_id = ? AND key = ?`, appID, key)
		if err != nil {
			return fmt.Errorf("delete config %s: %w", key, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ConfigNotFound(key)
		}
		return nil
	})
}

// CreateTask implements store.Apps.
func (s *Store) CreateTask(ctx context.Context, t *api.Task) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	if t.ID == "" {
		t.ID = ids.New()
	}
	t.CreatedAt = store.Time(time.Now())
	body, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := appScoped(ctx, tx, sc, t.AppID); err != nil {
			return err
		}
		var busy string
		err := tx.QueryRowContext(ctx, `SELECT id FROM app_tasks WHERE app_id = ? AND status IN (?, ?) LIMIT 1`,
			t.AppID, api.TaskQueued, api.TaskRunning).Scan(&busy)
		switch {
		case err == nil:
			return store.TaskRunning(busy)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("create task: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO app_tasks (id, app_id, status, body, created_at) VALUES (?, ?, ?, ?, ?)`,
			t.ID, t.AppID, t.Status, string(body), formatTime(t.CreatedAt)); err != nil {
			return fmt.Errorf("create task: %w", err)
		}
		return nil
	})
}

// GetTask implements store.Apps.
func (s *Store) GetTask(ctx context.Context, appID, id string) (*api.Task, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := appScoped(ctx, s.reads, sc, appID); err != nil {
		return nil, err
	}
	return getTask(ctx, s.reads, appID, id)
}

func getTask(ctx context.Context, q querier, appID, id string) (*api.Task, error) {
	var body string
	err := q.QueryRowContext(ctx, `SELECT body FROM app_tasks WHERE id = ? AND app_id = ?`, id, appID).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.TaskNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, err)
	}
	var t api.Task
	if err := json.Unmarshal([]byte(body), &t); err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	return &t, nil
}

// ListTasks implements store.Apps. Newest first by rowid, the order the
// tasks were stored: ids made in one millisecond are random in their low
// bits.
func (s *Store) ListTasks(ctx context.Context, appID string, limit int) ([]api.Task, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := appScoped(ctx, s.reads, sc, appID); err != nil {
		return nil, err
	}
	return queryTasks(ctx, s.reads, `SELECT body FROM app_tasks WHERE app_id = ? ORDER BY rowid DESC LIMIT ?`, appID, store.PageSize(limit))
}

// ActiveTasks implements store.Apps.
func (s *Store) ActiveTasks(ctx context.Context) ([]api.Task, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All {
		return nil, store.SystemOnly()
	}
	return queryTasks(ctx, s.reads, `SELECT body FROM app_tasks WHERE status IN (?, ?) ORDER BY rowid`, api.TaskQueued, api.TaskRunning)
}

func queryTasks(ctx context.Context, q querier, query string, args ...any) ([]api.Task, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []api.Task
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		var t api.Task
		if err := json.Unmarshal([]byte(body), &t); err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// UpdateTask implements store.Apps.
func (s *Store) UpdateTask(ctx context.Context, appID, id string, fn func(*api.Task) error) (*api.Task, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	var out *api.Task
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := appScoped(ctx, tx, sc, appID); err != nil {
			return err
		}
		t, err := getTask(ctx, tx, appID, id)
		if err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		t.ID, t.AppID = id, appID
		body, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE app_tasks SET status = ?, body = ? WHERE id = ?`, t.Status, string(body), id); err != nil {
			return fmt.Errorf("update task %s: %w", id, err)
		}
		out = t
		return nil
	})
	return out, err
}

// AppendTaskLog implements store.Apps. The caller owns the task: the log
// is not scoped again per chunk.
func (s *Store) AppendTaskLog(ctx context.Context, taskID string, data []byte) (int64, error) {
	var seq int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM app_task_log WHERE task_id = ?`, taskID).Scan(&seq); err != nil {
			return fmt.Errorf("task log: %w", err)
		}
		if seq > store.MaxTaskLogChunks {
			seq = 0
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO app_task_log (task_id, seq, data) VALUES (?, ?, ?)`, taskID, seq, data); err != nil {
			return fmt.Errorf("task log: %w", err)
		}
		return nil
	})
	return seq, err
}

// TaskLog implements store.Apps.
func (s *Store) TaskLog(ctx context.Context, taskID string, after int64, limit int) ([]store.LogChunk, error) {
	rows, err := s.reads.QueryContext(ctx, `SELECT seq, data FROM app_task_log WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		taskID, after, store.PageSize(limit))
	if err != nil {
		return nil, fmt.Errorf("task log: %w", err)
	}
	defer rows.Close()
	var out []store.LogChunk
	for rows.Next() {
		var c store.LogChunk
		if err := rows.Scan(&c.Seq, &c.Data); err != nil {
			return nil, fmt.Errorf("task log: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
