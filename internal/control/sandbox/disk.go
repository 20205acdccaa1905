package sandbox

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// A sandbox's disk: what its own files take (GET of one sandbox, the
// metrics, and the disk policy's sandbox.disk_full).

// diskUsageTimeout bounds measuring a sandbox's files for a Get (a walk,
// where the filesystem keeps no count).
const diskUsageTimeout = 2 * time.Second

// DiskUsage is what rec's files take, where its driver can tell; nil
// otherwise, or when measuring fails or takes too long (logged).
func (s *Service) DiskUsage(ctx context.Context, rec *store.Sandbox) *api.DiskUsage {
	if rec.State != api.StateRunning && rec.State != api.StatePaused && rec.State != api.StateStopped {
		return nil
	}
	d, err := s.drivers.of(rec)
	if err != nil {
		return nil
	}
	m, ok := d.(driver.DiskMeter)
	if !ok {
		return nil
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, diskUsageTimeout)
	defer cancel()
	u, err := m.DiskUsage(ctx, h)
	if err != nil {
		s.log.Warn("measure a sandbox's disk", logattr.Sandbox(rec.ID), "err", err)
		return nil
	}
	return &api.DiskUsage{UsedBytes: u.Bytes, LimitBytes: u.Limit, Method: u.Method}
}
