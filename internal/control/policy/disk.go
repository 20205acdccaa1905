package policy

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// diskFullSlack is how close to its limit a sandbox's usage counts as
// full: the filesystem refuses a write before the count reaches the cap
// exactly (btrfs: 16 KiB short of 16 MiB).
const diskFullSlack = 256 << 10

// disk reads the disk usage of every running sandbox with a disk limit
// and records sandbox.disk_full when it reached the limit, once until it
// falls below 90% again.
type disk struct {
	svc *sandbox.Service
	log *slog.Logger
	// full: the sandboxes whose disk_full was recorded and that have not
	// fallen below 90% since, of those seen in the last tick.
	full map[string]bool
}

func (p *disk) tick(ctx context.Context) {
	recs, err := p.svc.Owned(ctx, api.StateRunning)
	if err != nil {
		p.log.Warn("watch disk", "err", err)
		return
	}
	full := map[string]bool{}
	for _, rec := range recs {
		if rec.Limits.DiskMB == 0 {
			continue
		}
		u := p.svc.DiskUsage(ctx, rec)
		if u == nil || u.LimitBytes == 0 {
			full[rec.ID] = p.full[rec.ID]
			continue
		}
		was := p.full[rec.ID]
		switch {
		case u.UsedBytes+diskFullSlack >= u.LimitBytes:
			full[rec.ID] = true
			if !was {
				p.svc.Emit(ctx, rec, api.EventSandboxDiskFull,
					fmt.Sprintf("the sandbox's files reached its disk limit of %d MiB: writes fail with EDQUOT inside", rec.Limits.DiskMB),
					map[string]any{"used_bytes": u.UsedBytes, "limit_bytes": u.LimitBytes})
			}
		case u.UsedBytes >= u.LimitBytes/10*9:
			full[rec.ID] = was
		}
	}
	p.full = full
}
