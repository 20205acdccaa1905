package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// A sandbox's disk: what its own files take (GET of one sandbox), and an
// event when they reach its disk limit (the lifecycle loop).

// diskFullSlack is how close to its limit a sandbox's usage counts as
// full: the filesystem refuses a write before the count reaches the cap
// exactly (btrfs: 16 KiB short of 16 MiB).
const diskFullSlack = 256 << 10

// diskUsageTimeout bounds measuring a sandbox's files for a Get (a walk,
// where the filesystem keeps no count).
const diskUsageTimeout = 2 * time.Second

// diskUsage is what rec's files take, where its driver can tell; nil
// otherwise, or when measuring fails or takes too long (logged).
func (s *Service) diskUsage(ctx context.Context, rec *store.Sandbox) *api.DiskUsage {
	if rec.State != api.StateRunning && rec.State != api.StatePaused && rec.State != api.StateStopped {
		return nil
	}
	d, err := s.driverOf(rec)
	if err != nil {
		return nil
	}
	m, ok := d.(driver.DiskMeter)
	if !ok {
		return nil
	}
	h, err := s.decodeHandle(rec)
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

// watchDisk reads the disk usage of every running sandbox of this node
// with a disk limit and records sandbox.disk_full when it reached the
// limit, once until it falls below 90% again.
func (s *Service) watchDisk(ctx context.Context) {
	recs, err := s.store.AllSandboxes(ctx, api.StateRunning)
	if err != nil {
		s.log.Warn("watch disk", "err", err)
		return
	}
	for _, rec := range recs {
		if rec.Limits.DiskMB == 0 || !s.owns(rec) {
			continue
		}
		u := s.diskUsage(ctx, rec)
		if u == nil || u.LimitBytes == 0 {
			continue
		}
		s.mu.Lock()
		was := s.diskFull[rec.ID]
		full := u.UsedBytes+diskFullSlack >= u.LimitBytes
		switch {
		case full:
			s.diskFull[rec.ID] = true
		case u.UsedBytes < u.LimitBytes/10*9:
			delete(s.diskFull, rec.ID)
		}
		s.mu.Unlock()
		if full && !was {
			s.emit(ctx, rec, api.EventSandboxDiskFull,
				fmt.Sprintf("the sandbox's files reached its disk limit of %d MiB: writes fail with EDQUOT inside", rec.Limits.DiskMB),
				map[string]any{"used_bytes": u.UsedBytes, "limit_bytes": u.LimitBytes})
		}
	}
}

// forgetDisk drops what watchDisk kept of a sandbox once it is gone.
func (s *Service) forgetDisk(id string) {
	s.mu.Lock()
	delete(s.diskFull, id)
	s.mu.Unlock()
}
