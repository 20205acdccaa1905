package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

// The sandboxes' part of usage is kept in tenant_usage and node_usage:
// every write of a sandbox record moves its share (store.ShareOf) there
// in the same transaction, by an upsert that adds to the row under its
// lock, so the counters are the sum of the records' shares whatever
// processes write.

// addShare adds sign × sh to tenant's and node's counters.
func addShare(ctx context.Context, tx pgx.Tx, tenant, node string, sh store.SandboxShare, sign int) error {
	if sh == (store.SandboxShare{}) {
		return nil
	}
	n := int64(sign)
	if _, err := tx.Exec(ctx, `INSERT INTO tenant_usage AS u (tenant_id, sandboxes, memory_mb, cpu_milli, pids, disk_bytes)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id) DO UPDATE SET sandboxes = u.sandboxes + excluded.sandboxes, memory_mb = u.memory_mb + excluded.memory_mb,
			cpu_milli = u.cpu_milli + excluded.cpu_milli, pids = u.pids + excluded.pids, disk_bytes = u.disk_bytes + excluded.disk_bytes`,
		tenant, n*int64(sh.Placed), n*int64(sh.MemoryMB), n*int64(sh.CPUMilli), n*int64(sh.Pids), n*sh.DiskBytes); err != nil {
		return fmt.Errorf("count tenant %s's usage: %w", tenant, err)
	}
	if sh.MemoryMB == 0 && sh.CPUMilli == 0 && sh.Pids == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO node_usage AS u (node, memory_mb, cpu_milli, pids) VALUES ($1, $2, $3, $4)
		ON CONFLICT (node) DO UPDATE SET memory_mb = u.memory_mb + excluded.memory_mb, cpu_milli = u.cpu_milli + excluded.cpu_milli,
			pids = u.pids + excluded.pids`,
		node, n*int64(sh.MemoryMB), n*int64(sh.CPUMilli), n*int64(sh.Pids)); err != nil {
		return fmt.Errorf("count node %q's usage: %w", node, err)
	}
	return nil
}

// moveShare moves a record's share from what it was to what it is.
func moveShare(ctx context.Context, tx pgx.Tx, before, after *store.Sandbox) error {
	return store.MoveShare(before, after, func(tenant, node string, sh store.SandboxShare, sign int) error {
		return addShare(ctx, tx, tenant, node, sh, sign)
	})
}

// TenantUsage implements store.Store: the sandboxes' counters, and a
// count of each other kind by the tenant's index, all in one statement
// and so one snapshot.
func (s *Store) TenantUsage(ctx context.Context, id string) (store.TenantUsage, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.TenantUsage{}, err
	}
	if !sc.Admin && !sc.Sees(id) {
		return store.TenantUsage{}, store.TenantNotFound(id)
	}
	var (
		u      store.TenantUsage
		exists bool
	)
	err = s.pool.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM tenants WHERE id = $1),
			coalesce(u.sandboxes, 0), coalesce(u.memory_mb, 0), coalesce(u.cpu_milli, 0), coalesce(u.pids, 0), coalesce(u.disk_bytes, 0),
			(SELECT count(*) FROM snapshots WHERE tenant_id = $1),
			(SELECT coalesce(sum(bytes), 0)::bigint FROM snapshots WHERE tenant_id = $1),
			(SELECT count(*) FROM volumes WHERE tenant_id = $1),
			(SELECT coalesce(sum(size_mb), 0)::bigint FROM volumes WHERE tenant_id = $1),
			(SELECT count(*) FROM templates WHERE tenant_id = $1),
			(SELECT coalesce(sum(bytes), 0)::bigint FROM templates WHERE tenant_id = $1),
			(SELECT count(*) FROM apps WHERE tenant_id = $1),
			(SELECT count(*) FROM api_keys WHERE tenant_id = $1),
			(SELECT count(*) FROM secrets WHERE tenant_id = $1)
		FROM (SELECT 1) one LEFT JOIN tenant_usage u ON u.tenant_id = $1`, id).Scan(
		&exists, &u.Sandboxes, &u.MemoryMB, &u.CPUMilli, &u.Pids, &u.SandboxDiskBytes,
		&u.Snapshots, &u.SnapshotBytes, &u.Volumes, &u.VolumeMB, &u.Templates, &u.TemplateBytes,
		&u.Apps, &u.Keys, &u.Secrets)
	if err != nil {
		return store.TenantUsage{}, fmt.Errorf("usage of tenant %s: %w", id, err)
	}
	if !exists {
		return store.TenantUsage{}, store.TenantNotFound(id)
	}
	return u, nil
}

// NodeUsage implements store.Store.
func (s *Store) NodeUsage(ctx context.Context, node string) (store.NodeUsage, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return store.NodeUsage{}, err
	}
	var u store.NodeUsage
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(memory_mb), 0)::bigint, coalesce(sum(cpu_milli), 0)::bigint, coalesce(sum(pids), 0)::bigint
		FROM node_usage WHERE node IN ($1, '')`, node).Scan(&u.MemoryMB, &u.CPUMilli, &u.Pids); err != nil {
		return store.NodeUsage{}, fmt.Errorf("usage of node %q: %w", node, err)
	}
	return u, nil
}

// SetSandboxDisk implements store.Store.
func (s *Store) SetSandboxDisk(ctx context.Context, id string, bytes int64) error {
	if err := store.RequireSystem(ctx); err != nil {
		return err
	}
	if bytes < 0 {
		return fmt.Errorf("set the disk of sandbox %s: %d bytes", id, bytes)
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		before := &store.Sandbox{ID: id}
		err := tx.QueryRow(ctx, `SELECT tenant_id, state, node, disk_bytes FROM sandboxes WHERE id = $1 FOR NO KEY UPDATE`, id).
			Scan(&before.TenantID, &before.State, &before.Node, &before.DiskBytes)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.SandboxNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("set the disk of sandbox %s: %w", id, err)
		}
		if before.DiskBytes == bytes {
			return nil
		}
		after := *before
		after.DiskBytes = bytes
		if _, err := tx.Exec(ctx, `UPDATE sandboxes SET disk_bytes = $1 WHERE id = $2`, bytes, id); err != nil {
			return fmt.Errorf("set the disk of sandbox %s: %w", id, err)
		}
		// Only the disk moves: the limits are left out of both shares.
		if err := moveShare(ctx, tx, before, &after); err != nil {
			return err
		}
		_, err = nextRev(ctx, tx, id)
		return err
	})
}
