package policy

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// The disk policy measures the files of the running sandboxes, and of
// each once more after it stops (its files are then still), on a budget:
// each tick earns diskShare of its length in measuring time, up to
// diskBurst, and measurements go round the sandboxes from where the last
// tick stopped until the time earned is spent. Where the filesystem keeps
// a count (a btrfs qgroup) a measurement is one system call; elsewhere it
// is a walk of the files, and a large sandbox is measured less often
// rather than the host slowed: what a tick costs never grows with the
// number of sandboxes. Each measurement is recorded for the tenant's disk
// quota (sandbox.Service.MeasureDisk), and:
//
//   - a sandbox whose files reach its disk limit has sandbox.disk_full
//     recorded, once until they fall below 90% again; where the
//     filesystem does not enforce the limit, one past it is stopped;
//   - a sandbox whose files grew while its tenant is past its disk_mb
//     quota is stopped.

// The budget; variables so tests can shorten them.
var (
	// diskShare is the share of the time that measuring may take: 5% of
	// one core.
	diskShare = 0.05
	// diskBurst is the most measuring time saved up: one walk of a large
	// sandbox may take it, and the next ones wait until it is earned
	// back.
	diskBurst = 5 * time.Second
)

// diskFullSlack is how close to its limit a sandbox's usage counts as
// full: the filesystem refuses a write before the count reaches the cap
// exactly (btrfs: 16 KiB short of 16 MiB).
const diskFullSlack = 256 << 10

// disk is the disk policy.
type disk struct {
	svc *sandbox.Service
	log *slog.Logger
	// full: the sandboxes whose disk_full was recorded and that have not
	// fallen below 90% since, of those seen running in the last tick.
	full map[string]bool
	// running are the sandboxes seen running in the last tick; stopped,
	// those seen running before that are no more, to measure once.
	running map[string]bool
	stopped []string
	// next is where the next tick's measurements begin: the id after the
	// last one measured.
	next   string
	credit time.Duration // measuring time earned and not spent
	last   time.Time     // the last tick
}

// tick measures from recs, the running sandboxes.
func (p *disk) tick(ctx context.Context, now time.Time, recs []*store.Sandbox) {
	if p.last.IsZero() {
		p.credit = diskBurst
	} else {
		p.credit = min(p.credit+time.Duration(float64(now.Sub(p.last))*diskShare), diskBurst)
	}
	p.last = now
	running := make(map[string]bool, len(recs))
	for _, rec := range recs {
		running[rec.ID] = true
	}
	for id := range p.running {
		if !running[id] {
			p.stopped = append(p.stopped, id)
		}
	}
	p.running = running
	full := map[string]bool{}
	for _, rec := range recs {
		full[rec.ID] = p.full[rec.ID]
	}
	p.full = full

	// Those that stopped first: their files are what the tenant keeps.
	for len(p.stopped) > 0 && p.credit > 0 {
		id := p.stopped[0]
		p.stopped = p.stopped[1:]
		if rec, err := p.svc.Record(ctx, id); err == nil {
			p.measure(ctx, rec)
		}
	}
	// Then the running ones (Owned lists them oldest first, by id), from
	// where the last tick stopped.
	start := sort.Search(len(recs), func(i int) bool { return recs[i].ID >= p.next })
	for n := 0; n < len(recs) && p.credit > 0; n++ {
		rec := recs[(start+n)%len(recs)]
		p.next = rec.ID + "\x00"
		p.measure(ctx, rec)
	}
}

// measure measures rec's files and acts on what it finds.
func (p *disk) measure(ctx context.Context, rec *store.Sandbox) {
	m, ok, err := p.svc.MeasureDisk(ctx, rec)
	p.credit -= m.Took
	if err != nil {
		p.log.Warn("measure a sandbox's disk", logattr.Sandbox(rec.ID), "err", err)
		return
	}
	if !ok || rec.State != api.StateRunning {
		return
	}
	if limit := m.LimitBytes; limit > 0 {
		switch {
		case m.UsedBytes+diskFullSlack >= limit:
			if !p.full[rec.ID] {
				p.svc.Emit(ctx, rec, api.EventSandboxDiskFull, p.fullMessage(rec, m),
					map[string]any{"used_bytes": m.UsedBytes, "limit_bytes": limit})
			}
			p.full[rec.ID] = true
		case m.UsedBytes < limit/10*9:
			p.full[rec.ID] = false
		}
		if m.Enforcement == api.DiskEnforcedByStop && m.UsedBytes > limit {
			p.svc.StopForDisk(ctx, rec.ID, sandbox.ReasonDiskLimit, m.UsedBytes, limit)
			return
		}
	}
	if !m.Grew {
		return
	}
	used, limit, err := p.svc.TenantDisk(ctx, rec.TenantID)
	if err != nil {
		p.log.Warn("read a tenant's disk", logattr.Tenant(rec.TenantID), "err", err)
		return
	}
	if limit > 0 && used > limit {
		p.svc.StopForDisk(ctx, rec.ID, sandbox.ReasonDiskQuota, used, limit)
	}
}

// fullMessage says what a full disk means for rec.
func (p *disk) fullMessage(rec *store.Sandbox, m sandbox.DiskMeasure) string {
	if m.Enforcement == api.DiskEnforcedByStop {
		return fmt.Sprintf("the sandbox's files reached its disk limit of %d MiB: it is stopped once they pass it", rec.Limits.DiskMB)
	}
	return fmt.Sprintf("the sandbox's files reached its disk limit of %d MiB: writes fail with EDQUOT inside", rec.Limits.DiskMB)
}
