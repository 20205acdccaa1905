package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := lockApp(ctx, tx, sc, c.AppID); err != nil {
			return err
		}
		var created *time.Time
		if err := tx.QueryRow(ctx, `SELECT created_at FROM app_config WHERE app_id = $1 AND key = $2`, c.AppID, c.Key).
			Scan(&created); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("put config %s: %w", c.Key, err)
		}
		c.CreatedAt, c.UpdatedAt = now, now
		if created != nil {
			c.CreatedAt = *created
		} else {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM app_config WHERE app_id = $1`, c.AppID).Scan(&n); err != nil {
				return fmt.Errorf("put config %s: %w", c.Key, err)
			}
			if n >= api.MaxAppConfig {
				return errdefs.Conflict("too_much_config", "an app holds at most %d config entries", api.MaxAppConfig)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO app_config (app_id, key, value, sensitive, key_id, nonce, ciphertext, access,
				created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value, sensitive = excluded.sensitive,
				key_id = excluded.key_id, nonce = excluded.nonce, ciphertext = excluded.ciphertext,
				access = excluded.access, updated_at = excluded.updated_at`,
			c.AppID, c.Key, c.Value, c.Sensitive, c.KeyID, c.Nonce, c.Ciphertext, c.Access, c.CreatedAt, c.UpdatedAt)
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
	if _, err := getApp(ctx, s.pool, sc, appID, ""); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT app_id, key, value, sensitive, key_id, nonce, ciphertext, access, created_at,
		updated_at FROM app_config WHERE app_id = $1 ORDER BY key`, appID)
	if err != nil {
		return nil, fmt.Errorf("list config: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AppConfig, error) {
		var c store.AppConfig
		return c, r.Scan(&c.AppID, &c.Key, &c.Value, &c.Sensitive, &c.KeyID, &c.Nonce, &c.Ciphertext, &c.Access, &c.CreatedAt, &c.UpdatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list config: %w", err)
	}
	return out, nil
}

// DeleteAppConfig implements store.Apps.
func (s *Store) DeleteAppConfig(ctx context.Context, appID, key string) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := lockApp(ctx, tx, sc, appID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM app_config WHERE app_id = $1 AND key = $2`, appID, key)
		return oneRow(tag.RowsAffected(), err, "delete config "+key, store.ConfigNotFound(key))
	})
}

// CreateTask implements store.Apps. The app's row lock makes the check
// for a task queued or running and the insert one step in every process.
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
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := lockApp(ctx, tx, sc, t.AppID); err != nil {
			return err
		}
		var busy string
		err := tx.QueryRow(ctx, `SELECT id FROM app_tasks WHERE app_id = $1 AND status IN ($2, $3) LIMIT 1`,
			t.AppID, api.TaskQueued, api.TaskRunning).Scan(&busy)
		switch {
		case err == nil:
			return store.TaskRunning(busy)
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("create task: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO app_tasks (id, app_id, status, body, created_at) VALUES ($1, $2, $3, $4, $5)`,
			t.ID, t.AppID, t.Status, body, t.CreatedAt); err != nil {
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
	if _, err := getApp(ctx, s.pool, sc, appID, ""); err != nil {
		return nil, err
	}
	return getTask(ctx, s.pool, appID, id, "")
}

// getTask reads a task of appID, with lock ("" or a locking clause).
func getTask(ctx context.Context, q querier, appID, id, lock string) (*api.Task, error) {
	var t api.Task
	err := q.QueryRow(ctx, `SELECT body FROM app_tasks WHERE id = $1 AND app_id = $2 `+lock, id, appID).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.TaskNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, err)
	}
	return &t, nil
}

// ListTasks implements store.Apps: newest first in the order the tasks
// were stored (seq).
func (s *Store) ListTasks(ctx context.Context, appID string, limit int) ([]api.Task, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := getApp(ctx, s.pool, sc, appID, ""); err != nil {
		return nil, err
	}
	return s.queryTasks(ctx, `SELECT body FROM app_tasks WHERE app_id = $1 ORDER BY seq DESC LIMIT $2`, appID, store.PageSize(limit))
}

// ActiveTasks implements store.Apps.
func (s *Store) ActiveTasks(ctx context.Context) ([]api.Task, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	return s.queryTasks(ctx, `SELECT body FROM app_tasks WHERE status IN ($1, $2) ORDER BY seq`, api.TaskQueued, api.TaskRunning)
}

func (s *Store) queryTasks(ctx context.Context, query string, args ...any) ([]api.Task, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[api.Task])
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// UpdateTask implements store.Apps. The task's row is locked from the
// read to the commit.
func (s *Store) UpdateTask(ctx context.Context, appID, id string, fn func(*api.Task) error) (*api.Task, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	var out *api.Task
	err = s.write(ctx, func(tx pgx.Tx) error {
		if _, err := getApp(ctx, tx, sc, appID, ""); err != nil {
			return err
		}
		t, err := getTask(ctx, tx, appID, id, "FOR NO KEY UPDATE")
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
		if _, err := tx.Exec(ctx, `UPDATE app_tasks SET status = $1, body = $2 WHERE id = $3`, t.Status, body, id); err != nil {
			return fmt.Errorf("update task %s: %w", id, err)
		}
		out = t
		return nil
	})
	return out, err
}

// AppendTaskLog implements store.Apps. The caller owns the task: the log
// is not scoped again per chunk. Chunks of one task are numbered under
// taskLogLock, one at a time in every process.
func (s *Store) AppendTaskLog(ctx context.Context, taskID string, data []byte) (int64, error) {
	var seq int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lock(ctx, tx, taskLogLock, taskID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) + 1 FROM app_task_log WHERE task_id = $1`, taskID).Scan(&seq); err != nil {
			return fmt.Errorf("task log: %w", err)
		}
		if seq > store.MaxTaskLogChunks {
			seq = 0
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO app_task_log (task_id, seq, data) VALUES ($1, $2, $3)`, taskID, seq, data); err != nil {
			return fmt.Errorf("task log: %w", err)
		}
		return nil
	})
	return seq, err
}

// TaskLog implements store.Apps.
func (s *Store) TaskLog(ctx context.Context, taskID string, after int64, limit int) ([]store.LogChunk, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, data FROM app_task_log WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		taskID, after, store.PageSize(limit))
	if err != nil {
		return nil, fmt.Errorf("task log: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[store.LogChunk])
	if err != nil {
		return nil, fmt.Errorf("task log: %w", err)
	}
	return out, nil
}
