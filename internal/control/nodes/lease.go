package nodes

import (
	"context"
	"sync"
	"time"
)

// holdLease asks for the fleet lease every period until ctx ends: this
// node takes it when it is free or expired and renews it while it holds
// it. While it holds it, the fleet-wide work runs on a context of its
// own, ended as soon as a renewal does not say this node holds it (lost
// to another, or the store unreachable: better none run it for a moment
// than two). At the end it gives the lease up, so a survivor need not
// wait for its TTL.
func (n *Node) holdLease(ctx context.Context) {
	st, name := n.cfg.Store, n.cfg.Self.Name
	var w *fleetWork // the work under way; nil while not held
	defer func() {
		w.stop()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.Every)
		defer cancel()
		if err := st.ReleaseLease(rctx, FleetLease, name); err != nil {
			n.log.Warn("give up the fleet lease", "err", err)
		}
	}()
	t := time.NewTicker(n.cfg.Every)
	defer t.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, n.cfg.Every)
		l, err := st.AcquireLease(actx, FleetLease, name, LeaseTTL)
		cancel()
		switch held := err == nil && l.HeldBy(name); {
		case held && w == nil:
			n.log.Info("took the fleet lease: this node runs the fleet-wide work")
			w = n.startFleet(ctx)
		case !held && w != nil:
			n.log.Warn("lost the fleet lease: the fleet-wide work stops here", "holder", l.Holder, "err", err)
			w.stop()
			w = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// fleetWork is the fleet-wide work under way while this node holds the
// lease.
type fleetWork struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startFleet starts the fleet-wide work on a context of its own under
// ctx, each part on a goroutine.
func (n *Node) startFleet(ctx context.Context) *fleetWork {
	wctx, cancel := context.WithCancel(ctx)
	w := &fleetWork{cancel: cancel}
	w.wg.Go(func() { n.sweepLost(wctx) })
	for _, fn := range n.cfg.Fleet {
		w.wg.Go(func() { fn(wctx) })
	}
	return w
}

// stop ends the work and waits for it; a nil w has none.
func (w *fleetWork) stop() {
	if w == nil {
		return
	}
	w.cancel()
	w.wg.Wait()
}
