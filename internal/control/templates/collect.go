package templates

import (
	"context"
	"time"
)

// DefaultCollectEvery is how often a node of a fleet collects the layers
// no template names any more (Run).
const DefaultCollectEvery = time.Minute

// Run collects, every every, the layers and blobs no template names,
// until ctx ends. On one node a template's deletion collects at once
// (Delete); in a fleet a template deleted through another node leaves
// this node's copy of its layers until the next run here, which finds
// the template gone.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultCollectEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := s.Collect(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("collect unused layers", "err", err)
			}
		}
	}
}
