package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/hutchdev/hutch/internal/store"
)

const eventCols = `id, tenant_id, sandbox_id, type, message, data, created_at, app_id`

// AppendEvent implements store.Store. The ID is chosen inside the write
// transaction from the greatest ID stored; with one writer connection that
// makes IDs increase in commit order.
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
	err = s.write(ctx, func(tx *sql.Tx) error {
		if e.SandboxID != "" {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sandboxes WHERE id = ? AND tenant_id = ?`,
				e.SandboxID, e.TenantID).Scan(&n); err != nil {
				return fmt.Errorf("append event: %w", err)
			}
			if n == 0 {
				return store.SandboxNotFound(e.SandboxID)
			}
		}
		if e.AppID != "" {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM apps WHERE id = ? AND tenant_id = ?`,
				e.AppID, e.TenantID).Scan(&n); err != nil {
				return fmt.Errorf("append event: %w", err)
			}
			if n == 0 {
				return store.AppNotFound(e.AppID)
			}
		}
		var last sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT max(id) FROM events`).Scan(&last); err != nil {
			return fmt.Errorf("append event: %w", err)
		}
		id = store.NextEventID(last.String)
		_, err := tx.ExecContext(ctx, `INSERT INTO events (`+eventCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			id, e.TenantID, sql.NullString{String: e.SandboxID, Valid: e.SandboxID != ""}, e.Type, e.Message,
			sql.NullString{String: string(data), Valid: data != nil}, formatTime(e.CreatedAt),
			sql.NullString{String: e.AppID, Valid: e.AppID != ""})
		switch {
		case isForeignKey(err):
			return fmt.Errorf("append event: %w", store.TenantNotFound(e.TenantID))
		case err != nil:
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
	var (
		where strings.Builder
		args  []any
	)
	cond, cargs := listed(sc, "tenant_id")
	where.WriteString(cond)
	args = append(args, cargs...)
	if q.SandboxID != "" {
		where.WriteString(" AND sandbox_id = ?")
		args = append(args, q.SandboxID)
	}
	if q.AppID != "" {
		where.WriteString(" AND app_id = ?")
		args = append(args, q.AppID)
	}
	if len(q.Types) > 0 {
		where.WriteString(" AND type IN (?" + strings.Repeat(", ?", len(q.Types)-1) + ")")
		for _, t := range q.Types {
			args = append(args, t)
		}
	}
	if q.After != "" {
		where.WriteString(" AND id > ?")
		args = append(args, q.After)
	}
	args = append(args, limit+1)
	rows, err := s.reads.QueryContext(ctx, `SELECT `+eventCols+` FROM events WHERE 1 = 1`+where.String()+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	var evs []store.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list events: %w", err)
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list events: %w", err)
	}
	next := ""
	if len(evs) > limit {
		evs = evs[:limit]
		next = evs[limit-1].ID
	}
	return evs, next, nil
}

func scanEvent(row scanner) (store.Event, error) {
	var (
		e                  store.Event
		sandbox, data, app sql.NullString
		created            string
	)
	if err := row.Scan(&e.ID, &e.TenantID, &sandbox, &e.Type, &e.Message, &data, &created, &app); err != nil {
		return store.Event{}, err
	}
	e.SandboxID, e.AppID = sandbox.String, app.String
	var err error
	if e.Data, err = store.DecodeEventData([]byte(data.String)); err != nil {
		return store.Event{}, err
	}
	if e.CreatedAt, err = parseTime(created); err != nil {
		return store.Event{}, err
	}
	return e, nil
}

// TrimEvents implements store.Store. Each batch is one short write that
// finds its rows through an index (events_created by age, events_tenant
// by count) and deletes them by rowid; the per-tenant cut-offs are read
// on the read pool, so the writer is held for one batch at a time.
func (s *Store) TrimEvents(ctx context.Context, tr store.EventTrim) (int, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return 0, err
	}
	if !sc.All {
		return 0, store.SystemOnly()
	}
	total := 0
	if !tr.Before.IsZero() {
		n, err := s.trimBatches(ctx, `DELETE FROM events WHERE rowid IN
			(SELECT rowid FROM events WHERE created_at < ? ORDER BY created_at LIMIT ?)`, formatTime(tr.Before))
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
	tenants, err := s.tenantIDs(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, t := range tenants {
		// The newest of the tenant's events that goes: the keep+1-th
		// newest, found along events_tenant.
		var cut string
		err := s.reads.QueryRowContext(ctx, `SELECT id FROM events WHERE tenant_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?`,
			t, keep).Scan(&cut)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return total, err
		}
		n, err := s.trimBatches(ctx, `DELETE FROM events WHERE rowid IN
			(SELECT rowid FROM events WHERE tenant_id = ? AND id <= ? ORDER BY id LIMIT ?)`, t, cut)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// tenantIDs returns every tenant's id.
func (s *Store) tenantIDs(ctx context.Context) ([]string, error) {
	rows, err := s.reads.QueryContext(ctx, `SELECT id FROM tenants ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// trimBatches runs del, a DELETE whose last parameter is the batch's
// size, one write at a time until a batch deletes fewer than
// store.TrimBatch rows or ctx ends.
func (s *Store) trimBatches(ctx context.Context, del string, args ...any) (int, error) {
	args = append(args, store.TrimBatch)
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := s.write(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, del, args...)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < store.TrimBatch {
			return total, nil
		}
	}
}
