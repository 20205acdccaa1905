package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// sandboxCols reads a sandbox and, as one JSON object, its labels.
const sandboxCols = `s.id, s.tenant_id, s.state, s.template, s.driver, s.env, s.cwd, s.limits,
	s.timeout_s, s.handle, s.error, s.created_at, s.updated_at, s.expires_at, s.root, s.network, s.node, s.volumes, s.on_expiry,
	s.paused_at, s.idle_timeout_s, s.keepalive_until, s.disk_bytes, s.rev,
	(SELECT json_group_object(l.name, l.value) FROM sandbox_labels l WHERE l.sandbox_id = s.id)`

// CreateSandbox implements store.Store.
func (s *Store) CreateSandbox(ctx context.Context, sb *store.Sandbox) error {
	if err := store.PrepareSandbox(ctx, sb); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		enc, err := encodeSandbox(sb)
		if err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO sandboxes (id, tenant_id, state, template, driver, env, cwd, limits,
				timeout_s, handle, error, created_at, updated_at, expires_at, root, network, node, volumes, on_expiry,
				paused_at, idle_timeout_s, keepalive_until, disk_bytes, rev)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, `+nextRev+`)
			RETURNING rev`,
			sb.ID, sb.TenantID, string(sb.State), sb.Template, sb.Driver, enc.env, sb.Cwd, enc.limits,
			sb.TimeoutS, sb.Handle, sb.Error, formatTime(sb.CreatedAt), formatTime(sb.UpdatedAt), formatTimePtr(sb.ExpiresAt), sb.Root, enc.network, sb.Node, enc.volumes, sb.OnExpiry,
			formatTimePtr(sb.PausedAt), sb.IdleTimeoutS, formatTimePtr(sb.KeepaliveUntil), sb.DiskBytes).Scan(&sb.Rev)
		switch {
		case isUnique(err):
			return fmt.Errorf("create sandbox %s: %w", sb.ID, store.SandboxExists(sb.ID))
		case isForeignKey(err):
			return fmt.Errorf("create sandbox %s: %w", sb.ID, store.TenantNotFound(sb.TenantID))
		case err != nil:
			return fmt.Errorf("create sandbox %s: %w", sb.ID, err)
		}
		if err := addShare(ctx, tx, sb.TenantID, sb.Node, store.ShareOf(sb), 1); err != nil {
			return err
		}
		return insertLabels(ctx, tx, sb.ID, sb.Labels)
	})
}

// GetSandbox implements store.Store.
func (s *Store) GetSandbox(ctx context.Context, id string) (*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	return getSandbox(ctx, s.reads, sc, id)
}

func getSandbox(ctx context.Context, q querier, sc store.Scope, id string) (*store.Sandbox, error) {
	cond, args := scoped(sc, "s.tenant_id")
	sb, err := scanSandbox(q.QueryRowContext(ctx, `SELECT `+sandboxCols+` FROM sandboxes s WHERE s.id = ?`+cond,
		append([]any{id}, args...)...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.SandboxNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	return sb, nil
}

// ListSandboxes implements store.Store.
func (s *Store) ListSandboxes(ctx context.Context, opts store.ListOptions) ([]*store.Sandbox, string, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, "", err
	}
	limit := store.PageSize(opts.Limit)
	var (
		where strings.Builder
		args  []any
	)
	cond, cargs := listed(sc, "s.tenant_id")
	where.WriteString(cond)
	args = append(args, cargs...)
	if opts.State != "" {
		where.WriteString(" AND s.state = ?")
		args = append(args, string(opts.State))
	}
	if opts.Cursor != "" {
		after, err := store.DecodeCursor(opts.Cursor)
		if err != nil {
			return nil, "", err
		}
		where.WriteString(" AND s.id < ?")
		args = append(args, after)
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Labels)) {
		where.WriteString(" AND EXISTS (SELECT 1 FROM sandbox_labels l WHERE l.sandbox_id = s.id AND l.name = ? AND l.value = ?)")
		args = append(args, name, opts.Labels[name])
	}
	args = append(args, limit+1)
	sbs, err := querySandboxes(ctx, s.r,
		`SELECT `+sandboxCols+` FROM sandboxes s WHERE 1 = 1`+where.String()+` ORDER BY s.id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list sandboxes: %w", err)
	}
	next := ""
	if len(sbs) > limit {
		sbs = sbs[:limit]
		next = store.EncodeCursor(sbs[limit-1].ID)
	}
	return sbs, next, nil
}

// UpdateSandbox implements store.Store.
func (s *Store) UpdateSandbox(ctx context.Context, id string, fn func(*store.Sandbox) error) (*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	var out *store.Sandbox
	err = s.write(ctx, func(tx *sql.Tx) error {
		sb, err := getSandbox(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		before := *sb
		before.Labels = maps.Clone(sb.Labels)
		if err := fn(sb); err != nil {
			return err
		}
		if err := store.UpdatedSandbox(&before, sb); err != nil {
			return err
		}
		enc, err := encodeSandbox(sb)
		if err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `UPDATE sandboxes SET state = ?, template = ?, driver = ?, env = ?, cwd = ?,
				limits = ?, timeout_s = ?, handle = ?, error = ?, updated_at = ?, expires_at = ?, root = ?, network = ?, node = ?,
				volumes = ?, on_expiry = ?, paused_at = ?, idle_timeout_s = ?, keepalive_until = ?, rev = `+nextRev+`
			WHERE id = ? RETURNING rev`,
			string(sb.State), sb.Template, sb.Driver, enc.env, sb.Cwd, enc.limits, sb.TimeoutS, sb.Handle, sb.Error,
			formatTime(sb.UpdatedAt), formatTimePtr(sb.ExpiresAt), sb.Root, enc.network, sb.Node, enc.volumes, sb.OnExpiry,
			formatTimePtr(sb.PausedAt), sb.IdleTimeoutS, formatTimePtr(sb.KeepaliveUntil), sb.ID).Scan(&sb.Rev); err != nil {
			return fmt.Errorf("update sandbox %s: %w", id, err)
		}
		if err := moveShare(ctx, tx, &before, sb); err != nil {
			return err
		}
		if !maps.Equal(before.Labels, sb.Labels) {
			if _, err := tx.ExecContext(ctx, `DELETE FROM sandbox_labels WHERE sandbox_id = ?`, sb.ID); err != nil {
				return fmt.Errorf("update sandbox %s: %w", id, err)
			}
			if err := insertLabels(ctx, tx, sb.ID, sb.Labels); err != nil {
				return err
			}
		}
		out = sb
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AllSandboxes implements store.Store.
func (s *Store) AllSandboxes(ctx context.Context, states ...api.SandboxState) ([]*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All {
		return nil, store.SystemOnly()
	}
	where, args := "", []any(nil)
	if len(states) > 0 {
		where = " WHERE s.state IN (?" + strings.Repeat(", ?", len(states)-1) + ")"
		for _, st := range states {
			args = append(args, string(st))
		}
	}
	sbs, err := querySandboxes(ctx, s.r, `SELECT `+sandboxCols+` FROM sandboxes s`+where+` ORDER BY s.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("all sandboxes: %w", err)
	}
	return sbs, nil
}

// nextRev is the revision a sandbox's record gets when written: one more
// than any record's. Writes are serialised, so revisions grow in the
// order writes commit.
const nextRev = `(SELECT coalesce(max(rev), 0) + 1 FROM sandboxes)`

// SandboxesSince implements store.Store.
func (s *Store) SandboxesSince(ctx context.Context, rev int64, states ...api.SandboxState) ([]*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All {
		return nil, store.SystemOnly()
	}
	where, args := " WHERE s.rev > ?", []any{rev}
	if len(states) > 0 {
		where += " AND s.state IN (?" + strings.Repeat(", ?", len(states)-1) + ")"
		for _, st := range states {
			args = append(args, string(st))
		}
	}
	sbs, err := querySandboxes(ctx, s.r, `SELECT `+sandboxCols+` FROM sandboxes s`+where+` ORDER BY s.rev`, args...)
	if err != nil {
		return nil, fmt.Errorf("sandboxes since %d: %w", rev, err)
	}
	return sbs, nil
}

// DeleteSandbox implements store.Store. Its labels go with it (ON DELETE
// CASCADE).
func (s *Store) DeleteSandbox(ctx context.Context, id string) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		sb, err := getSandbox(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sandboxes WHERE id = ?`, id)
		if err := oneRow(res, err, "delete sandbox "+id, store.SandboxNotFound(id)); err != nil {
			return err
		}
		return addShare(ctx, tx, sb.TenantID, sb.Node, store.ShareOf(sb), -1)
	})
}

func insertLabels(ctx context.Context, tx *sql.Tx, id string, labels map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sandbox_labels (sandbox_id, name, value) VALUES (?, ?, ?)`,
			id, name, labels[name]); err != nil {
			return fmt.Errorf("label sandbox %s: %w", id, err)
		}
	}
	return nil
}

// encodedSandbox is a sandbox's columns that the store keeps as JSON.
type encodedSandbox struct {
	env, volumes    sql.NullString
	limits, network string
}

func encodeSandbox(sb *store.Sandbox) (encodedSandbox, error) {
	var out encodedSandbox
	var err error
	if out.env, err = encodeMap(sb.Env); err != nil {
		return out, fmt.Errorf("encode env of sandbox %s: %w", sb.ID, err)
	}
	b, err := json.Marshal(sb.Limits)
	if err != nil {
		return out, fmt.Errorf("encode limits of sandbox %s: %w", sb.ID, err)
	}
	out.limits = string(b)
	if b, err = json.Marshal(sb.Network); err != nil {
		return out, fmt.Errorf("encode network of sandbox %s: %w", sb.ID, err)
	}
	out.network = string(b)
	if len(sb.Volumes) > 0 {
		if b, err = json.Marshal(sb.Volumes); err != nil {
			return out, fmt.Errorf("encode volumes of sandbox %s: %w", sb.ID, err)
		}
		out.volumes = sql.NullString{String: string(b), Valid: true}
	}
	return out, nil
}

func querySandboxes(ctx context.Context, q querier, query string, args ...any) ([]*store.Sandbox, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sbs []*store.Sandbox
	for rows.Next() {
		sb, err := scanSandbox(rows)
		if err != nil {
			return nil, err
		}
		sbs = append(sbs, sb)
	}
	return sbs, rows.Err()
}

func scanSandbox(row scanner) (*store.Sandbox, error) {
	var (
		sb               store.Sandbox
		state            string
		env, labels      sql.NullString
		volumes          sql.NullString
		limits, network  string
		created, updated string
		expires          sql.NullString
		paused, keep     sql.NullString
	)
	if err := row.Scan(&sb.ID, &sb.TenantID, &state, &sb.Template, &sb.Driver, &env, &sb.Cwd, &limits,
		&sb.TimeoutS, &sb.Handle, &sb.Error, &created, &updated, &expires, &sb.Root, &network, &sb.Node, &volumes, &sb.OnExpiry,
		&paused, &sb.IdleTimeoutS, &keep, &sb.DiskBytes, &sb.Rev, &labels); err != nil {
		return nil, err
	}
	sb.State = api.SandboxState(state)
	var err error
	if sb.Env, err = decodeMap(env); err != nil {
		return nil, err
	}
	if sb.Labels, err = decodeMap(labels); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(limits), &sb.Limits); err != nil {
		return nil, fmt.Errorf("stored limits: %w", err)
	}
	if err := json.Unmarshal([]byte(network), &sb.Network); err != nil {
		return nil, fmt.Errorf("stored network policy: %w", err)
	}
	if volumes.Valid {
		if err := json.Unmarshal([]byte(volumes.String), &sb.Volumes); err != nil {
			return nil, fmt.Errorf("stored volumes: %w", err)
		}
	}
	if sb.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if sb.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, err
	}
	if sb.ExpiresAt, err = parseTimePtr(expires); err != nil {
		return nil, err
	}
	if sb.PausedAt, err = parseTimePtr(paused); err != nil {
		return nil, err
	}
	if sb.KeepaliveUntil, err = parseTimePtr(keep); err != nil {
		return nil, err
	}
	if len(sb.Handle) == 0 {
		sb.Handle = nil
	}
	return &sb, nil
}
