package nodes

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// drain stops the sandboxes this node still runs once its drain's
// deadline has passed, on the store's clock (the row's HeartbeatAt is
// the store's now). The stops run beside the heartbeat, never in its
// way (a heartbeat late past store.LostAfter would make the node lost),
// one pass at a time; each goes through the sandbox service, under the
// sandbox's lock. A sandbox started again meanwhile is stopped by the
// next pass.
type drain struct {
	n    *Node
	busy atomic.Bool
	wg   sync.WaitGroup
}

// check starts a pass of stops if row's drain is past its deadline and
// none is under way.
func (d *drain) check(ctx context.Context, row *store.Node) {
	if row.State != store.NodeDraining || row.DrainDeadline == nil || row.HeartbeatAt.Before(*row.DrainDeadline) {
		return
	}
	if !d.busy.CompareAndSwap(false, true) {
		return
	}
	d.wg.Go(func() {
		defer d.busy.Store(false)
		d.pass(ctx)
	})
}

// pass stops every sandbox this node runs.
func (d *drain) pass(ctx context.Context) {
	svc := d.n.cfg.Sandboxes
	recs, err := svc.Owned(ctx, api.StateRunning, api.StatePaused)
	if err != nil {
		d.n.log.Warn("drain: list this node's sandboxes", "err", err)
		return
	}
	if len(recs) > 0 {
		d.n.log.Info("drain deadline passed: stopping this node's sandboxes", "sandboxes", len(recs))
	}
	for _, rec := range recs {
		if ctx.Err() != nil {
			return
		}
		svc.StopForDrain(ctx, rec.ID)
	}
}

// wait waits for a pass under way.
func (d *drain) wait() { d.wg.Wait() }
