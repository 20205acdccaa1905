package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

const eventCols = `id, tenant_id, coalesce(sandbox_id, ''), type, message, data, created_at, coalesce(app_id, '')`

// AppendEvent implements store.Store. The ID is chosen under
// event_clock's row lock, the last lock the append takes and held until
// it commits: appends from every process take their IDs one at a time in
// the order they commit, so a reader that has seen an ID never later
// finds a smaller one.
func (s *Store) AppendEvent(ctx context.Context, e *store.Event) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All || e.TenantID == "" {
		e.TenantID = sc.TenantID
	}
	data, err := store.CheckEvent(e)
	if err != nil {
		return err
	}
	var id string
	err = s.write(ctx, func(tx pgx.Tx) error {
		var ok bool
		if e.SandboxID != "" {
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sandboxes WHERE id = $1 AND tenant_id = $2)`,
				e.SandboxID, e.TenantID).Scan(&ok); err != nil {
				return fmt.Errorf("append event: %w", err)
			}
			if !ok {
				return store.SandboxNotFound(e.SandboxID)
			}
		}
		if e.AppID != "" {
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM apps WHERE id = $1 AND tenant_id = $2)`,
				e.AppID, e.TenantID).Scan(&ok); err != nil {
				return fmt.Errorf("append event: %w", err)
			}
			if !ok {
				return store.AppNotFound(e.AppID)
			}
		}
		// The tenant's share lock (migration 0001's trigger takes it
		// too) before the clock's, so the clock is never held waiting
		// for a change of the tenant.
		if _, err := getTenant(ctx, tx, e.TenantID, "FOR SHARE"); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
		var last string
		if err := tx.QueryRow(ctx, `SELECT last FROM event_clock FOR UPDATE`).Scan(&last); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
		id = store.NextEventID(last)
		if _, err := tx.Exec(ctx, `INSERT INTO events (id, tenant_id, sandbox_id, type, message, data, created_at, app_id)
			VALUES ($1, $2, nullif($3, ''), $4, $5, $6, $7, nullif($8, ''))`,
			id, e.TenantID, e.SandboxID, e.Type, e.Message, data, e.CreatedAt, e.AppID); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE event_clock SET last = $1`, id); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.ID = id
	return nil
}

// ListEvents implements store.Store.
func (s *Store) ListEvents(ctx context.Context, q store.EventQuery) ([]store.Event, string, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := store.CheckAfter(q.After); err != nil {
		return nil, "", err
	}
	limit := store.PageSize(q.Limit)
	args := pgx.NamedArgs{"limit": limit + 1}
	where := listed(sc, "tenant_id", args)
	if q.SandboxID != "" {
		where += " AND sandbox_id = @sandbox"
		args["sandbox"] = q.SandboxID
	}
	if q.AppID != "" {
		where += " AND app_id = @app"
		args["app"] = q.AppID
	}
	if len(q.Types) > 0 {
		where += " AND type = ANY(@types)"
		args["types"] = q.Types
	}
	if q.After != "" {
		where += " AND id > @after"
		args["after"] = q.After
	}
	rows, err := s.pool.Query(ctx, `SELECT `+eventCols+` FROM events WHERE true`+where+` ORDER BY id LIMIT @limit`, args)
	if err != nil {
		return nil, "", fmt.Errorf("list events: %w", err)
	}
	evs, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, "", fmt.Errorf("list events: %w", err)
	}
	next := ""
	if len(evs) > limit {
		evs = evs[:limit]
		next = evs[limit-1].ID
	}
	return evs, next, nil
}

func scanEvent(row pgx.CollectableRow) (store.Event, error) {
	var (
		e    store.Event
		data []byte
	)
	if err := row.Scan(&e.ID, &e.TenantID, &e.SandboxID, &e.Type, &e.Message, &data, &e.CreatedAt, &e.AppID); err != nil {
		return store.Event{}, err
	}
	var err error
	e.Data, err = store.DecodeEventData(data)
	return e, err
}

// TrimEvents implements store.Store. Each batch is one statement that
// finds its rows through an index (events_created by age, events_tenant
// by count).
func (s *Store) TrimEvents(ctx context.Context, tr store.EventTrim) (int, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return 0, err
	}
	total := 0
	if !tr.Before.IsZero() {
		n, err := s.trimBatches(ctx, `DELETE FROM events WHERE id IN
			(SELECT id FROM events WHERE created_at < @before ORDER BY created_at LIMIT @batch)`, pgx.NamedArgs{"before": tr.Before})
		total += n
		if err != nil {
			return total, fmt.Errorf("trim events by age: %w", err)
		}
	}
	if tr.MaxPerTenant > 0 {
		n, err := s.trimPerTenant(ctx, tr.MaxPerTenant)
		total += n
		if err != nil {
			return total, fmt.Errorf("trim events by count: %w", err)
		}
	}
	return total, nil
}

// trimPerTenant deletes, of each tenant's events, all but the newest
// keep.
func (s *Store) trimPerTenant(ctx context.Context, keep int) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM tenants ORDER BY id`)
	if err != nil {
		return 0, err
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	total := 0
	for _, t := range tenants {
		// The newest of the tenant's events that goes: the keep+1-th
		// newest, found along events_tenant.
		var cut string
		err := s.pool.QueryRow(ctx, `SELECT id FROM events WHERE tenant_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2`, t, keep).Scan(&cut)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return total, err
		}
		n, err := s.trimBatches(ctx, `DELETE FROM events WHERE id IN
			(SELECT id FROM events WHERE tenant_id = @tenant AND id <= @cut ORDER BY id LIMIT @batch)`,
			pgx.NamedArgs{"tenant": t, "cut": cut})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// trimBatches runs del, a DELETE of at most @batch rows, one statement at
// a time until one deletes fewer than store.TrimBatch rows or ctx ends.
func (s *Store) trimBatches(ctx context.Context, del string, args pgx.NamedArgs) (int, error) {
	args["batch"] = store.TrimBatch
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		tag, err := s.pool.Exec(ctx, del, args)
		if err != nil {
			return total, err
		}
		n := int(tag.RowsAffected())
		total += n
		if n < store.TrimBatch {
			return total, nil
		}
	}
}
