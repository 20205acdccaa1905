package events

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TrimEvery is how often Run trims the log to Config.Retention and
// Config.MaxPerTenant.
const TrimEvery = 10 * time.Minute

// Run trims the log at once and then every TrimEvery, until ctx ends; it
// returns once the trim under way, if any, has stopped. With neither
// Retention nor MaxPerTenant set it only waits for ctx.
func (l *Log) Run(ctx context.Context) {
	l.run(ctx, TrimEvery)
}

func (l *Log) run(ctx context.Context, every time.Duration) {
	ctx = tenancy.System(ctx)
	t := time.NewTicker(every)
	defer t.Stop()
	for now := time.Now(); ; {
		l.Trim(ctx, now)
		select {
		case <-ctx.Done():
			return
		case now = <-t.C:
		}
	}
}

// Trim deletes the events the retention settings no longer keep. The
// store deletes in short batches, so appends go on meanwhile.
func (l *Log) Trim(ctx context.Context, now time.Time) {
	tr := store.EventTrim{MaxPerTenant: l.cfg.MaxPerTenant}
	if l.cfg.Retention > 0 {
		tr.Before = now.Add(-l.cfg.Retention)
	}
	if tr.Before.IsZero() && tr.MaxPerTenant <= 0 {
		return
	}
	start := time.Now()
	n, err := l.store.TrimEvents(ctx, tr)
	if err != nil {
		l.log.Warn("trim the event log", "deleted", n, "err", err)
		return
	}
	if n > 0 {
		l.log.Info("trimmed the event log", "deleted", n, "took", time.Since(start).Round(time.Millisecond))
	}
}
