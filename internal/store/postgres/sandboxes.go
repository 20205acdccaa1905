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

const sandboxCols = `s.id, s.tenant_id, s.state, s.template, s.driver, s.env, s.cwd, s.limits,
	s.timeout_s, s.handle, s.error, s.created_at, s.updated_at, s.expires_at, s.root, s.network, s.node, s.volumes, s.on_expiry,
	s.paused_at, s.idle_timeout_s, s.keepalive_until, s.disk_bytes, s.rev, s.labels`

// CreateSandbox implements store.Store.
func (s *Store) CreateSandbox(ctx context.Context, sb *store.Sandbox) error {
	if err := store.PrepareSandbox(ctx, sb); err != nil {
		return err
	}
	enc, err := encodeSandbox(sb)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO sandboxes (id, tenant_id, state, template, driver, env, cwd, limits,
				timeout_s, handle, error, created_at, updated_at, expires_at, root, network, node, volumes, on_expiry,
				paused_at, idle_timeout_s, keepalive_until, disk_bytes, labels)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)`,
			sb.ID, sb.TenantID, sb.State, sb.Template, sb.Driver, enc.env, sb.Cwd, enc.limits,
			sb.TimeoutS, sb.Handle, sb.Error, sb.CreatedAt, sb.UpdatedAt, sb.ExpiresAt, sb.Root, enc.network, sb.Node, enc.volumes, sb.OnExpiry,
			sb.PausedAt, sb.IdleTimeoutS, sb.KeepaliveUntil, sb.DiskBytes, enc.labels)
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
		sb.Rev, err = nextRev(ctx, tx, sb.ID)
		return err
	})
}

// nextRev gives sandbox id's record the next revision and returns it. It
// is a write's last statement: sandbox_clock's row stays locked until the
// write commits, so revisions grow in the order writes commit, and a
// reader of SandboxesSince never misses one committed late.
func nextRev(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
	var rev int64
	if err := tx.QueryRow(ctx, `WITH c AS (UPDATE sandbox_clock SET rev = rev + 1 RETURNING rev)
		UPDATE sandboxes s SET rev = c.rev FROM c WHERE s.id = $1 RETURNING s.rev`, id).Scan(&rev); err != nil {
		return 0, fmt.Errorf("revise sandbox %s: %w", id, err)
	}
	return rev, nil
}

// GetSandbox implements store.Store.
func (s *Store) GetSandbox(ctx context.Context, id string) (*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	return getSandbox(ctx, s.pool, sc, id, "")
}

// getSandbox reads a sandbox sc sees, with lock ("" or a locking clause).
func getSandbox(ctx context.Context, q querier, sc store.Scope, id, lock string) (*store.Sandbox, error) {
	args := pgx.NamedArgs{"id": id}
	cond := scoped(sc, "s.tenant_id", args)
	sb, err := scanSandbox(q.QueryRow(ctx, `SELECT `+sandboxCols+` FROM sandboxes s WHERE s.id = @id`+cond+` `+lock, args))
	if errors.Is(err, pgx.ErrNoRows) {
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
	args := pgx.NamedArgs{"limit": limit + 1}
	where := listed(sc, "s.tenant_id", args)
	if opts.State != "" {
		where += " AND s.state = @state"
		args["state"] = opts.State
	}
	if opts.Cursor != "" {
		after, err := store.DecodeCursor(opts.Cursor)
		if err != nil {
			return nil, "", err
		}
		where += " AND s.id < @after"
		args["after"] = after
	}
	if len(opts.Labels) > 0 {
		labels, err := json.Marshal(opts.Labels)
		if err != nil {
			return nil, "", fmt.Errorf("list sandboxes: %w", err)
		}
		where += " AND s.labels @> @labels"
		args["labels"] = labels
	}
	sbs, err := querySandboxes(ctx, s.pool, `SELECT `+sandboxCols+` FROM sandboxes s WHERE true`+where+` ORDER BY s.id DESC LIMIT @limit`, args)
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

// UpdateSandbox implements store.Store. The record's row is locked from
// the read to the commit, so updates of one sandbox, in any process, run
// one after another, each reading what the one before wrote: of racing
// transitions from one state exactly one finds it.
func (s *Store) UpdateSandbox(ctx context.Context, id string, fn func(*store.Sandbox) error) (*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	var out *store.Sandbox
	err = s.write(ctx, func(tx pgx.Tx) error {
		sb, err := getSandbox(ctx, tx, sc, id, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		before := *sb
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
		if _, err := tx.Exec(ctx, `UPDATE sandboxes SET state = $1, template = $2, driver = $3, env = $4, cwd = $5,
				limits = $6, timeout_s = $7, handle = $8, error = $9, updated_at = $10, expires_at = $11, root = $12, network = $13,
				node = $14, volumes = $15, on_expiry = $16, paused_at = $17, idle_timeout_s = $18, keepalive_until = $19, labels = $20
			WHERE id = $21`,
			sb.State, sb.Template, sb.Driver, enc.env, sb.Cwd, enc.limits, sb.TimeoutS, sb.Handle, sb.Error,
			sb.UpdatedAt, sb.ExpiresAt, sb.Root, enc.network, sb.Node, enc.volumes, sb.OnExpiry,
			sb.PausedAt, sb.IdleTimeoutS, sb.KeepaliveUntil, enc.labels, sb.ID); err != nil {
			return fmt.Errorf("update sandbox %s: %w", id, err)
		}
		if err := moveShare(ctx, tx, &before, sb); err != nil {
			return err
		}
		if sb.Rev, err = nextRev(ctx, tx, sb.ID); err != nil {
			return err
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
	args := pgx.NamedArgs{}
	sbs, err := querySandboxes(ctx, s.pool, `SELECT `+sandboxCols+` FROM sandboxes s WHERE true`+inStates(states, args)+` ORDER BY s.id`, args)
	if err != nil {
		return nil, fmt.Errorf("all sandboxes: %w", err)
	}
	return sbs, nil
}

// SandboxesSince implements store.Store.
func (s *Store) SandboxesSince(ctx context.Context, rev int64, states ...api.SandboxState) ([]*store.Sandbox, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All {
		return nil, store.SystemOnly()
	}
	args := pgx.NamedArgs{"rev": rev}
	sbs, err := querySandboxes(ctx, s.pool, `SELECT `+sandboxCols+` FROM sandboxes s WHERE s.rev > @rev`+inStates(states, args)+` ORDER BY s.rev`, args)
	if err != nil {
		return nil, fmt.Errorf("sandboxes since %d: %w", rev, err)
	}
	return sbs, nil
}

// inStates is the condition limiting a query of sandboxes s to states,
// none when empty.
func inStates(states []api.SandboxState, args pgx.NamedArgs) string {
	if len(states) == 0 {
		return ""
	}
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = string(st)
	}
	args["states"] = names
	return " AND s.state = ANY(@states)"
}

// DeleteSandbox implements store.Store. Its ports and events go with it
// (ON DELETE CASCADE).
func (s *Store) DeleteSandbox(ctx context.Context, id string) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		sb, err := getSandbox(ctx, tx, sc, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sandboxes WHERE id = $1`, id)
		if err := oneRow(tag.RowsAffected(), err, "delete sandbox "+id, store.SandboxNotFound(id)); err != nil {
			return err
		}
		return addShare(ctx, tx, sb.TenantID, sb.Node, store.ShareOf(sb), -1)
	})
}

// encodedSandbox is a sandbox's columns that the store keeps as JSON.
type encodedSandbox struct {
	env, volumes, labels []byte // nil when empty
	limits, network      []byte
}

func encodeSandbox(sb *store.Sandbox) (encodedSandbox, error) {
	var out encodedSandbox
	var err error
	if out.env, err = mapArg(sb.Env); err != nil {
		return out, fmt.Errorf("encode env of sandbox %s: %w", sb.ID, err)
	}
	if out.labels, err = mapArg(sb.Labels); err != nil {
		return out, fmt.Errorf("encode labels of sandbox %s: %w", sb.ID, err)
	}
	if out.limits, err = json.Marshal(sb.Limits); err != nil {
		return out, fmt.Errorf("encode limits of sandbox %s: %w", sb.ID, err)
	}
	if out.network, err = json.Marshal(sb.Network); err != nil {
		return out, fmt.Errorf("encode network of sandbox %s: %w", sb.ID, err)
	}
	if len(sb.Volumes) > 0 {
		if out.volumes, err = json.Marshal(sb.Volumes); err != nil {
			return out, fmt.Errorf("encode volumes of sandbox %s: %w", sb.ID, err)
		}
	}
	return out, nil
}

func querySandboxes(ctx context.Context, q querier, query string, args pgx.NamedArgs) ([]*store.Sandbox, error) {
	rows, err := q.Query(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Sandbox, error) { return scanSandbox(r) })
}

func scanSandbox(row pgx.Row) (*store.Sandbox, error) {
	var (
		sb                   store.Sandbox
		env, labels, volumes []byte
		limits, network      []byte
	)
	if err := row.Scan(&sb.ID, &sb.TenantID, &sb.State, &sb.Template, &sb.Driver, &env, &sb.Cwd, &limits,
		&sb.TimeoutS, &sb.Handle, &sb.Error, &sb.CreatedAt, &sb.UpdatedAt, &sb.ExpiresAt, &sb.Root, &network, &sb.Node, &volumes, &sb.OnExpiry,
		&sb.PausedAt, &sb.IdleTimeoutS, &sb.KeepaliveUntil, &sb.DiskBytes, &sb.Rev, &labels); err != nil {
		return nil, err
	}
	var err error
	if sb.Env, err = decodeMap(env); err != nil {
		return nil, err
	}
	if sb.Labels, err = decodeMap(labels); err != nil {
		return nil, err
	}
	if err := decodeJSON(limits, &sb.Limits, "limits"); err != nil {
		return nil, err
	}
	if err := decodeJSON(network, &sb.Network, "network policy"); err != nil {
		return nil, err
	}
	if volumes != nil {
		if err := decodeJSON(volumes, &sb.Volumes, "volumes"); err != nil {
			return nil, err
		}
	}
	if len(sb.Handle) == 0 {
		sb.Handle = nil
	}
	return &sb, nil
}
