package nodes

import (
	"context"
	"errors"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// heartbeat writes this node's load every period until ctx ends, and
// follows what the row says back (a drain). A heartbeat that fails is
// logged and tried at the next period; a row removed stays removed
// (store.Nodes): the node says so loudly and is lost to the others
// until it starts again. After a gap, the sandboxes other nodes marked
// unavailable meanwhile are taken back (reclaim.go).
func (n *Node) heartbeat(ctx context.Context, d *drain) {
	t := time.NewTicker(n.cfg.Every)
	defer t.Stop()
	r := &reclaim{n: n}
	defer r.wait()
	last := time.Now() // of the last heartbeat that landed (Register's, first)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		row, err := n.beat(ctx)
		switch {
		case errors.Is(err, errdefs.ErrNotFound):
			n.log.Error("this node's row was removed from the store: it is lost to the fleet until hutch serve starts again")
			continue
		case err != nil:
			if ctx.Err() == nil {
				n.log.Warn("heartbeat", "err", err, "since_last", time.Since(last).Round(time.Millisecond))
			}
			continue
		}
		gap := time.Since(last)
		last = time.Now()
		n.follow(row)
		d.check(ctx, row)
		r.beat(ctx, gap)
	}
}

// beat writes one heartbeat, bounded by the period.
func (n *Node) beat(ctx context.Context) (*store.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Every)
	defer cancel()
	load, err := n.cfg.Sandboxes.NodeLoad(ctx)
	if err != nil {
		return nil, err
	}
	return n.cfg.Store.HeartbeatNode(ctx, n.cfg.Self.Name, load)
}

// follow takes up the state of this node's row: a draining node takes
// no new sandbox.
func (n *Node) follow(row *store.Node) {
	n.cfg.Sandboxes.SetDraining(row.State == store.NodeDraining)
}
