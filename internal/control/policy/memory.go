package policy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// The memory policy. While the host's available memory is below
// memory_low_pct of its total, the idle window shrinks in proportion to
// what is left (down to min_idle_s; a sandbox with no idle window gets
// pressureBase of min_idle_s) and idle sandboxes are paused, as the seeds'
// idle watchdog does; below memory_critical_pct, paused sandboxes are
// stopped, the longest paused first, until memory is back above it.

// pressureBase is the idle window under pressure, in min_idle_s, of a
// sandbox that has none.
const pressureBase = 10

// maxPressureStops bounds the sandboxes one tick stops for memory, so the
// kernel's count of available memory catches up between rounds.
const maxPressureStops = 8

// HostMemory reads the host's available and total memory in bytes.
type HostMemory func() (available, total uint64, err error)

// pressure is what the memory policy asks of one tick.
type pressure struct {
	pct      int // available memory, % of total; 100 without a reading
	low      bool
	critical bool
	minIdle  time.Duration
	reason   string // sandbox.ReasonIdle, or sandbox.ReasonPressure when low
}

// readPressure reads the host's memory against set.
func readPressure(memory HostMemory, set api.Settings, log *slog.Logger) pressure {
	p := pressure{pct: 100, minIdle: seconds(set.MinIdleS), reason: sandbox.ReasonIdle}
	if set.MemoryLowPct == 0 && set.MemoryCriticalPct == 0 {
		return p
	}
	avail, total, err := memory()
	if err != nil || total == 0 {
		log.Warn("memory policy: read the host's memory", "err", err)
		return p
	}
	p.pct = int(avail * 100 / total)
	p.low = p.pct < set.MemoryLowPct
	p.critical = p.pct < set.MemoryCriticalPct
	if p.low {
		p.reason = sandbox.ReasonPressure
	}
	return p
}

// window is the idle window of a sandbox whose own is w (0: none), as
// memory pressure shrinks it.
func (p pressure) window(w time.Duration) time.Duration {
	if !p.low {
		return w
	}
	if w <= 0 {
		w = pressureBase * p.minIdle
	}
	return max(p.minIdle, w*time.Duration(p.pct)/time.Duration(100))
}

// action is what is done to an idle sandbox: onIdle, or a pause under
// pressure.
func (p pressure) action(onIdle string) string {
	if p.low {
		return api.OnExpiryPause
	}
	return onIdle
}

// stopPaused stops the paused sandboxes of recs paused longer than
// paused_stop_after_s and, under critical pressure, the longest paused
// first until memory is back above it.
func (p *idle) stopPaused(ctx context.Context, recs []*store.Sandbox, set api.Settings, pr pressure, now time.Time) {
	slices.SortFunc(recs, func(a, b *store.Sandbox) int { return a.PausedAt.Compare(*b.PausedAt) })
	stopped := 0
	for _, rec := range recs {
		after := seconds(set.PausedStopAfterS)
		switch {
		case after > 0 && now.Sub(*rec.PausedAt) >= after:
			p.svc.StopPaused(ctx, rec.ID, fmt.Sprintf("paused for %s", after), sandbox.ReasonIdle)
		case pr.critical && stopped < maxPressureStops:
			stopped++
			p.svc.StopPaused(ctx, rec.ID, fmt.Sprintf("host memory at %d%%, below %d%%", pr.pct, set.MemoryCriticalPct), sandbox.ReasonPressure)
			pr = readPressure(p.memory, set, p.log)
		}
	}
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }
