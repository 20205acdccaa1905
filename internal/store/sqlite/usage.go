package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// The sandboxes' part of usage is kept in tenant_usage and node_usage
// (migration 0020): every write of a sandbox record moves its share
// (store.ShareOf) there in the same transaction, so the counters are the
// sum of the records' shares, and a read is one row.

// addShare adds sign × sh to tenant's and node's counters.
func addShare(ctx context.Context, tx *sql.Tx, tenant, node string, sh store.SandboxShare, sign int) error {
	if sh == (store.SandboxShare{}) {
		return nil
	}
	n := int64(sign)
	if _, err := tx.ExecContext(ctx, `INSERT INTO tenant_usage (tenant_id, sandboxes, memory_mb, cpu_milli, pids, disk_bytes)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id) DO UPDATE SET sandboxes = sandboxes + excluded.sandboxes, memory_mb = memory_mb + excluded.memory_mb,
			cpu_milli = cpu_milli + excluded.cpu_milli, pids = pids + excluded.pids, disk_bytes = disk_bytes + excluded.disk_bytes`,
		tenant, n*int64(sh.Placed), n*int64(sh.MemoryMB), n*int64(sh.CPUMilli), n*int64(sh.Pids), n*sh.DiskBytes); err != nil {
		return fmt.Errorf("count tenant %s's usage: %w", tenant, err)
	}
	if sh.MemoryMB == 0 && sh.CPUMilli == 0 && sh.Pids == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO node_usage (node, memory_mb, cpu_milli, pids) VALUES (?, ?, ?, ?)
		ON CONFLICT (node) DO UPDATE SET memory_mb = memory_mb + excluded.memory_mb, cpu_milli = cpu_milli + excluded.cpu_milli,
			pids = pids + excluded.pids`,
		node, n*int64(sh.MemoryMB), n*int64(sh.CPUMilli), n*int64(sh.Pids)); err != nil {
		return fmt.Errorf("count node %q's usage: %w", node, err)
	}
	return nil
}

// moveShare moves a record's share from what it was to what it is.
func moveShare(ctx context.Context, tx *sql.Tx, before, after *store.Sandbox) error {
	return store.MoveShare(before, after, func(tenant, node string, sh store.SandboxShare, sign int) error {
		return addShare(ctx, tx, tenant, node, sh, sign)
	})
}

// TenantUsage implements store.Store: the sandboxes' counters, and a
// count of each other kind by the tenant's index.
func (s *Store) TenantUsage(ctx context.Context, id string) (store.TenantUsage, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.TenantUsage{}, err
	}
	if !sc.Admin && !sc.Sees(id) {
		return store.TenantUsage{}, store.TenantNotFound(id)
	}
	var (
		u       store.TenantUsage
		tenants int
	)
	err = s.reads.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM tenants WHERE id = ?1),
			coalesce((SELECT sandboxes FROM tenant_usage WHERE tenant_id = ?1), 0),
			coalesce((SELECT memory_mb FROM tenant_usage WHERE tenant_id = ?1), 0),
			coalesce((SELECT cpu_milli FROM tenant_usage WHERE tenant_id = ?1), 0),
			coalesce((SELECT pids FROM tenant_usage WHERE tenant_id = ?1), 0),
			coalesce((SELECT disk_bytes FROM tenant_usage WHERE tenant_id = ?1), 0),
			(SELECT count(*) FROM snapshots WHERE tenant_id = ?1),
			(SELECT coalesce(sum(bytes), 0) FROM snapshots WHERE tenant_id = ?1),
			(SELECT count(*) FROM volumes WHERE tenant_id = ?1),
			(SELECT coalesce(sum(size_mb), 0) FROM volumes WHERE tenant_id = ?1),
			(SELECT count(*) FROM templates WHERE tenant_id = ?1),
			(SELECT coalesce(sum(bytes), 0) FROM templates WHERE tenant_id = ?1),
			(SELECT count(*) FROM apps WHERE tenant_id = ?1),
			(SELECT count(*) FROM api_keys WHERE tenant_id = ?1),
			(SELECT count(*) FROM secrets WHERE tenant_id = ?1)`, id).Scan(
		&tenants, &u.Sandboxes, &u.MemoryMB, &u.CPUMilli, &u.Pids, &u.SandboxDiskBytes,
		&u.Snapshots, &u.SnapshotBytes, &u.Volumes, &u.VolumeMB, &u.Templates, &u.TemplateBytes,
		&u.Apps, &u.Keys, &u.Secrets)
	if err != nil {
		return store.TenantUsage{}, fmt.Errorf("usage of tenant %s: %w", id, err)
	}
	if tenants == 0 {
		return store.TenantUsage{}, store.TenantNotFound(id)
	}
	return u, nil
}

// NodeUsage implements store.Store.
func (s *Store) NodeUsage(ctx context.Context, node string) (store.NodeUsage, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return store.NodeUsage{}, err
	}
	if !sc.All {
		return store.NodeUsage{}, store.SystemOnly()
	}
	var u store.NodeUsage
	if err := s.reads.QueryRowContext(ctx, `SELECT coalesce(sum(memory_mb), 0), coalesce(sum(cpu_milli), 0), coalesce(sum(pids), 0)
		FROM node_usage WHERE node IN (?, '')`, node).Scan(&u.MemoryMB, &u.CPUMilli, &u.Pids); err != nil {
		return store.NodeUsage{}, fmt.Errorf("usage of node %q: %w", node, err)
	}
	return u, nil
}

// SetSandboxDisk implements store.Store.
func (s *Store) SetSandboxDisk(ctx context.Context, id string, bytes int64) error {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All {
		return store.SystemOnly()
	}
	if bytes < 0 {
		return fmt.Errorf("set the disk of sandbox %s: %d bytes", id, bytes)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		before := &store.Sandbox{ID: id}
		var state string
		err := tx.QueryRowContext(ctx, `SELECT tenant_id, state, node, disk_bytes FROM sandboxes WHERE id = ?`, id).
			Scan(&before.TenantID, &state, &before.Node, &before.DiskBytes)
		if errors.Is(err, sql.ErrNoRows) {
			return store.SandboxNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("set the disk of sandbox %s: %w", id, err)
		}
		if before.DiskBytes == bytes {
			return nil
		}
		before.State = api.SandboxState(state)
		after := *before
		after.DiskBytes = bytes
		if _, err := tx.ExecContext(ctx, `UPDATE sandboxes SET disk_bytes = ?, rev = `+nextRev+` WHERE id = ?`, bytes, id); err != nil {
			return fmt.Errorf("set the disk of sandbox %s: %w", id, err)
		}
		// Only the disk moves: the limits are left out of both shares.
		return moveShare(ctx, tx, before, &after)
	})
}
