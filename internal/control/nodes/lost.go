package nodes

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// sweepLost, every period until ctx ends, takes over the sandboxes of
// every node lost (store.Node.Lost: its last heartbeat older than
// store.LostAfter on the store's clock) whose driver reaches them from
// any node (sandbox.Service.Adopt), and marks the other running and
// paused ones unavailable. A node is swept once per silence: until it
// heartbeats again, nothing of it changes, so its sandboxes are listed
// once, not every period.
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
	recs, err := n.cfg.Store.AllSandboxes(ctx, sandbox.Recoverable...)
	if err != nil {
		n.log.Warn("lost nodes: list the sandboxes", "err", err)
		return
	}
	of := map[string][]*store.Sandbox{}
	for _, rec := range recs {
		if _, ok := lost[rec.Node]; ok {
			of[rec.Node] = append(of[rec.Node], rec)
		}
	}
	for name, nd := range lost {
		adopted, rest := n.cfg.Sandboxes.Adopt(ctx, name, of[name])
		marked := 0
		for _, rec := range rest {
			if ctx.Err() == nil && (rec.State == api.StateRunning || rec.State == api.StatePaused) && n.cfg.Sandboxes.MarkUnavailable(ctx, rec.ID, rec.Node) {
				marked++
			}
		}
		if ctx.Err() != nil {
			return
		}
		swept[name] = nd.HeartbeatAt
		n.log.Warn("node lost: its sandboxes are unavailable until it returns, but those this node took over", "lost", name,
			"heartbeat_age", nd.HeartbeatAge.Round(time.Millisecond), "unavailable", marked, "taken_over", adopted)
	}
}
