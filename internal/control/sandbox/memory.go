package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
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

// pressureNow is what the memory policy asks of one tick.
type pressureNow struct {
	pct      int // available memory, % of total; 100 without a reading
	low      bool
	critical bool
	minIdle  time.Duration
	reason   string // reasonIdle, or reasonPressure when low
}

// pressure reads the host's memory against set.
func (s *Service) pressure(set api.Settings) pressureNow {
	p := pressureNow{pct: 100, minIdle: seconds(set.MinIdleS), reason: reasonIdle}
	if set.MemoryLowPct == 0 && set.MemoryCriticalPct == 0 {
		return p
	}
	avail, total, err := s.cfg.HostMemory()
	if err != nil || total == 0 {
		s.log.Warn("memory policy: read the host's memory", "err", err)
		return p
	}
	p.pct = int(avail * 100 / total)
	p.low = p.pct < set.MemoryLowPct
	p.critical = p.pct < set.MemoryCriticalPct
	if p.low {
		p.reason = reasonPressure
	}
	return p
}

// window is the idle window of a sandbox whose own is w (0: none), as
// memory pressure shrinks it.
func (p pressureNow) window(w time.Duration) time.Duration {
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
func (p pressureNow) action(onIdle string) string {
	if p.low {
		return api.OnExpiryPause
	}
	return onIdle
}

// stopPaused stops the paused sandboxes of recs paused longer than
// paused_stop_after_s and, under critical pressure, the longest paused
// first until memory is back above it.
func (s *Service) stopPaused(ctx context.Context, recs []*store.Sandbox, set api.Settings, p pressureNow, now time.Time) {
	slices.SortFunc(recs, func(a, b *store.Sandbox) int { return a.PausedAt.Compare(*b.PausedAt) })
	stopped := 0
	for _, rec := range recs {
		after := seconds(set.PausedStopAfterS)
		switch {
		case after > 0 && now.Sub(*rec.PausedAt) >= after:
			s.stopPausedOne(ctx, rec.ID, fmt.Sprintf("paused for %s", after), reasonIdle)
		case p.critical && stopped < maxPressureStops:
			stopped++
			s.stopPausedOne(ctx, rec.ID, fmt.Sprintf("host memory at %d%%, below %d%%", p.pct, set.MemoryCriticalPct), reasonPressure)
			p = s.pressure(set)
		}
	}
}

// stopPausedOne stops sandbox id, if it is still paused once its lock is
// held.
func (s *Service) stopPausedOne(ctx context.Context, id, why, reason string) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StatePaused {
		return
	}
	if _, err := s.stop(ctx, rec, "paused sandbox stopped: "+why, holdClock, map[string]any{"reason": reason}); err != nil {
		s.log.Warn("stop paused sandbox", logattr.Sandbox(id), "err", err)
	}
}

// ReadMeminfo is the host's HostMemory: MemAvailable and MemTotal of
// /proc/meminfo.
func ReadMeminfo() (available, total uint64, err error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		switch string(f[0]) {
		case "MemAvailable:":
			available = n << 10
		case "MemTotal:":
			total = n << 10
		}
	}
	if total == 0 {
		return 0, 0, errors.New("/proc/meminfo has no MemTotal")
	}
	return available, total, nil
}
