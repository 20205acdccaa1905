package sandbox

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// TrimEvery is how often Run trims the event log to Config.EventRetention
// and Config.EventMaxPerTenant.
const TrimEvery = 10 * time.Minute

// trimEvents deletes the events the retention settings no longer keep.
// The store deletes in short batches, so appends go on meanwhile.
func (s *Service) trimEvents(ctx context.Context, now time.Time) {
	tr := store.EventTrim{MaxPerTenant: s.cfg.EventMaxPerTenant}
	if s.cfg.EventRetention > 0 {
		tr.Before = now.Add(-s.cfg.EventRetention)
	}
	if tr.Before.IsZero() && tr.MaxPerTenant <= 0 {
		return
	}
	start := time.Now()
	n, err := s.store.TrimEvents(ctx, tr)
	if err != nil {
		s.log.Warn("trim the event log", "deleted", n, "err", err)
		return
	}
	if n > 0 {
		s.log.Info("trimmed the event log", "deleted", n, "took", time.Since(start).Round(time.Millisecond))
	}
}
