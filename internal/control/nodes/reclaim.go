package nodes

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// reclaimAfter is the gap between heartbeats that landed after which
// this node may have been judged lost (store.LostAfter on the store's
// clock, which the node's does not measure exactly: half of it, to be
// sure), and reclaimBeats how many heartbeats after such a gap take its
// sandboxes back: the judge's sweep may mark them just after the first.
const (
	reclaimAfter = store.LostAfter / 2
	reclaimBeats = 3
)

// reclaim takes back, after a gap in this node's heartbeats, the
// sandboxes another node marked unavailable meanwhile
// (sandbox.Service.Reclaim), beside the heartbeat, one pass at a time.
type reclaim struct {
	n    *Node
	left int // passes still to run after the last gap
	busy atomic.Bool
	wg   sync.WaitGroup
}

// beat is told of each heartbeat that landed, gap after the one before.
func (r *reclaim) beat(ctx context.Context, gap time.Duration) {
	if gap >= reclaimAfter {
		r.n.log.Warn("this node's heartbeats failed for a while: other nodes may have found it lost; taking its sandboxes back",
			"gap", gap.Round(time.Millisecond))
		r.left = reclaimBeats
	}
	if r.left == 0 || !r.busy.CompareAndSwap(false, true) {
		return
	}
	r.left--
	r.wg.Go(func() {
		defer r.busy.Store(false)
		if err := r.n.cfg.Sandboxes.Reclaim(ctx); err != nil && ctx.Err() == nil {
			r.n.log.Warn("take back this node's sandboxes", "err", err)
		}
	})
}

// wait waits for a pass under way.
func (r *reclaim) wait() { r.wg.Wait() }
