package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// A sandbox's disk: what its own files take (GET of one sandbox, the
// metrics, its tenant's disk quota) and how its disk limit holds. Where
// its driver caps the files with the filesystem's quota (a btrfs qgroup)
// a write past the limit fails; where the driver can only measure them
// (driver.DiskMeter without Capabilities.Limits.Disk: ext4, xfs without
// project quotas, overlay on anything), the service takes the limit all
// the same and the disk policy (internal/control/policy) measures the
// files on a budget (MeasureDisk) and stops the sandbox once they pass it
// (StopForDisk). Each measurement is recorded in the store
// (store.Usage.SetSandboxDisk), which is how a tenant's disk quota counts
// its sandboxes.

const (
	// diskUsageTimeout bounds measuring a sandbox's files for a Get (a
	// walk, where the filesystem keeps no count).
	diskUsageTimeout = 2 * time.Second
	// diskMeasureTimeout bounds one measurement of the disk policy: a
	// walk of a few million files.
	diskMeasureTimeout = 30 * time.Second
)

// enforcesDisk says how d holds a sandbox's disk limit: by the
// filesystem's quota, or, where it can only measure, by the disk policy's
// stop; "" when it can do neither.
func enforcesDisk(d driver.Driver) string {
	if d.Capabilities().Limits.Disk {
		return api.DiskEnforcedByQuota
	}
	if _, ok := d.(driver.DiskMeter); ok {
		return api.DiskEnforcedByStop
	}
	return ""
}

// DiskUsage is what rec's files take, where its driver can tell; nil
// otherwise, or when measuring fails or takes too long (logged).
func (s *Service) DiskUsage(ctx context.Context, rec *store.Sandbox) *api.DiskUsage {
	ctx, cancel := context.WithTimeout(ctx, diskUsageTimeout)
	defer cancel()
	u, _, err := s.measureDisk(ctx, rec)
	if err != nil {
		s.log.Warn("measure a sandbox's disk", logattr.Sandbox(rec.ID), "err", err)
		return nil
	}
	return u
}

// measureDisk measures rec's files; nil when its driver cannot or rec
// has none (it is neither running, paused nor stopped).
func (s *Service) measureDisk(ctx context.Context, rec *store.Sandbox) (*api.DiskUsage, driver.Driver, error) {
	if rec.State != api.StateRunning && rec.State != api.StatePaused && rec.State != api.StateStopped {
		return nil, nil, nil
	}
	d, err := s.drivers.of(rec)
	if err != nil {
		return nil, nil, nil
	}
	m, ok := d.(driver.DiskMeter)
	if !ok {
		return nil, d, nil
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return nil, d, err
	}
	u, err := m.DiskUsage(ctx, h)
	if err != nil {
		return nil, d, err
	}
	out := &api.DiskUsage{UsedBytes: u.Bytes, LimitBytes: u.Limit, Method: u.Method}
	if rec.Limits.DiskMB > 0 {
		out.LimitBytes, out.Enforcement = int64(rec.Limits.DiskMB)<<20, enforcesDisk(d)
	}
	return out, d, nil
}

// DiskMeasure is what MeasureDisk found of a sandbox's files.
type DiskMeasure struct {
	api.DiskUsage
	// Grew says the files take at least a MiB more than the last
	// measurement recorded.
	Grew bool
	// Took is how long measuring took (the disk policy's budget).
	Took time.Duration
}

// MeasureDisk measures rec's files, within diskMeasureTimeout, and
// records what they take for its tenant's disk quota. ok is false when
// its driver cannot measure them.
func (s *Service) MeasureDisk(ctx context.Context, rec *store.Sandbox) (m DiskMeasure, ok bool, err error) {
	start := time.Now()
	mctx, cancel := context.WithTimeout(ctx, diskMeasureTimeout)
	u, _, err := s.measureDisk(mctx, rec)
	cancel()
	m.Took = time.Since(start)
	if err != nil || u == nil {
		return m, false, err
	}
	m.DiskUsage = *u
	// Recorded at a MiB's grain: a sandbox that writes a log line costs
	// no write to the store.
	if u.UsedBytes>>20 != rec.DiskBytes>>20 {
		m.Grew = u.UsedBytes>>20 > rec.DiskBytes>>20
		err := s.store.SetSandboxDisk(tenancy.System(ctx), rec.ID, u.UsedBytes)
		s.droppedRecord(rec.ID)
		if err != nil {
			return m, true, fmt.Errorf("record the disk of sandbox %s: %w", rec.ID, err)
		}
	}
	return m, true, nil
}

// TenantDisk is what tenantID has on disk, and its disk_mb quota in
// bytes (0: no limit).
func (s *Service) TenantDisk(ctx context.Context, tenantID string) (used, limit int64, err error) {
	return s.cfg.Quotas.Disk(ctx, tenantID)
}

// Reasons a sandbox is stopped for its disk (its sandbox.stopped event's
// "reason").
const (
	// ReasonDiskLimit: its files passed its own disk limit.
	ReasonDiskLimit = "disk_limit"
	// ReasonDiskQuota: its files grew while its tenant was past its disk
	// quota.
	ReasonDiskQuota = "disk_quota"
)

// StopForDisk stops sandbox id for its disk, reason ReasonDiskLimit or
// ReasonDiskQuota, its files having reached used bytes of limit, if it
// still runs once its lock is held. Its files are kept: its owner frees
// them (a start, then deletes), restores a snapshot, or destroys it.
func (s *Service) StopForDisk(ctx context.Context, id, reason string, used, limit int64) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || (rec.State != api.StateRunning && rec.State != api.StatePaused) {
		return
	}
	up := func(n int64) int64 { return (n + 1<<20 - 1) >> 20 } // MiB, as quotas show them
	what := fmt.Sprintf("its files take %d MiB, past its disk limit of %d MiB", up(used), up(limit))
	if reason == ReasonDiskQuota {
		what = fmt.Sprintf("its files grew while its tenant's take %d MiB, past the tenant's disk_mb quota of %d MiB", up(used), up(limit))
	}
	if _, err := s.stop(ctx, rec, "sandbox stopped: "+what, holdClock,
		map[string]any{"reason": reason, "used_bytes": used, "limit_bytes": limit}); err != nil {
		s.log.Warn("stop a sandbox for its disk", logattr.Sandbox(id), "reason", reason, "err", err)
		return
	}
	s.log.Info("sandbox stopped for its disk", logattr.Sandbox(id), logattr.Tenant(rec.TenantID), "reason", reason, "used_bytes", used, "limit_bytes", limit)
}
