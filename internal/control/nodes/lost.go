package nodes

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// sweepLost, every period until ctx ends, marks unavailable the running
// and paused sandboxes of every node lost (store.Node.Lost: its last
// heartbeat older than store.LostAfter on the store's clock). A node is
// swept once per silence: until it heartbeats again, nothing of it
// changes, so its sandboxes are listed once, not every period.
func (n *Node) sweepLost(ctx context.Context) {
	swept := map[string]time.Time{} // lost node → the heartbeat its sweep followed
	t := time.NewTicker(n.cfg.Every)
	defer t.Stop()
	for {
		n.sweepOnce(ctx, swept)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepOnce is one pass of sweepLost.
func (n *Node) sweepOnce(ctx context.Context, swept map[string]time.Time) {
	nodes, err := n.cfg.Store.ListNodes(ctx)
	if err != nil {
		n.log.Warn("lost nodes: list the nodes", "err", err)
		return
	}
	lost, still := map[string]*store.Node{}, map[string]bool{}
	for _, nd := range nodes {
		if !nd.Lost() || nd.Name == n.cfg.Self.Name {
			continue
		}
		still[nd.Name] = true
		if !swept[nd.Name].Equal(nd.HeartbeatAt) {
			lost[nd.Name] = nd
		}
	}
	for name := range swept {
		if !still[name] {
			delete(swept, name)
		}
	}
	if len(lost) == 0 {
		return
	}
	recs, err := n.cfg.Store.AllSandboxes(ctx, api.StateRunning, api.StatePaused)
	if err != nil {
		n.log.Warn("lost nodes: list the sandboxes", "err", err)
		return
	}
	marked := map[string]int{}
	for _, rec := range recs {
		if _, ok := lost[rec.Node]; ok && ctx.Err() == nil && n.cfg.Sandboxes.MarkUnavailable(ctx, rec.ID, rec.Node) {
			marked[rec.Node]++
		}
	}
	if ctx.Err() != nil {
		return
	}
	for name, nd := range lost {
		swept[name] = nd.HeartbeatAt
		n.log.Warn("node lost: its sandboxes are unavailable until it returns", "lost", name,
			"heartbeat_age", nd.HeartbeatAge.Round(time.Millisecond), "sandboxes", marked[name])
	}
}
