package nodes

import (
	"context"
	"slices"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// What GET /v1/nodes and the drain ask of the fleet. The store refuses
// anyone but an admin (or the system).

// MaxDrainDeadline bounds how far off a drain's deadline may be.
const MaxDrainDeadline = 7 * 24 * time.Hour

// List returns every node of the fleet, by name.
func (n *Node) List(ctx context.Context) (api.NodeList, error) {
	nodes, err := n.cfg.Store.ListNodes(ctx)
	if err != nil {
		return api.NodeList{}, err
	}
	leases, err := n.cfg.Store.ListLeases(ctx)
	if err != nil {
		return api.NodeList{}, err
	}
	out := api.NodeList{Nodes: make([]api.Node, 0, len(nodes))}
	for _, nd := range nodes {
		out.Nodes = append(out.Nodes, toAPI(nd, leases))
	}
	return out, nil
}

// Get returns one node.
func (n *Node) Get(ctx context.Context, name string) (api.Node, error) {
	nd, err := n.cfg.Store.GetNode(ctx, name)
	if err != nil {
		return api.Node{}, err
	}
	leases, err := n.cfg.Store.ListLeases(ctx)
	if err != nil {
		return api.Node{}, err
	}
	return toAPI(nd, leases), nil
}

// Drain makes node name draining: it takes no new sandbox from its next
// heartbeat on (at once when it is this node), and, with a deadline,
// stops the sandboxes it still runs once the deadline passes.
func (n *Node) Drain(ctx context.Context, name string, req api.DrainNodeRequest) (api.Node, error) {
	if req.DeadlineS < 0 || time.Duration(req.DeadlineS)*time.Second > MaxDrainDeadline {
		return api.Node{}, errdefs.Invalid("invalid_deadline", "deadline_s must be 0 (none) to %d seconds", int(MaxDrainDeadline.Seconds()))
	}
	var deadline *time.Time
	if req.DeadlineS > 0 {
		// On the store's clock, as the drained node judges it: the
		// store's now is a read's heartbeat plus its age.
		nd, err := n.cfg.Store.GetNode(ctx, name)
		if err != nil {
			return api.Node{}, err
		}
		d := nd.HeartbeatAt.Add(nd.HeartbeatAge + time.Duration(req.DeadlineS)*time.Second)
		deadline = &d
	}
	nd, err := n.cfg.Store.DrainNode(ctx, name, deadline)
	if err != nil {
		return api.Node{}, err
	}
	if name == n.cfg.Self.Name {
		n.follow(nd)
	}
	n.log.Info("node draining", "drained", name, "deadline", deadline)
	return n.Get(ctx, name)
}

// Activate ends node name's drain: it takes new sandboxes again from
// its next heartbeat on (at once when it is this node). Sandboxes a
// drain stopped stay stopped.
func (n *Node) Activate(ctx context.Context, name string) (api.Node, error) {
	nd, err := n.cfg.Store.ActivateNode(ctx, name)
	if err != nil {
		return api.Node{}, err
	}
	if name == n.cfg.Self.Name {
		n.follow(nd)
	}
	n.log.Info("node active", "activated", name)
	return n.Get(ctx, name)
}

// Remove removes a lost node for good: its sandboxes that are neither
// destroyed nor failed are failed first (sandbox.Service.Abandon: they
// no longer count against quotas, and any node destroys them), then its
// row goes. A node not lost is 409 node_not_lost: drain it and stop it
// first. A Remove cut short is done again by the next.
func (n *Node) Remove(ctx context.Context, name string) error {
	nd, err := n.cfg.Store.GetNode(ctx, name)
	if err != nil {
		return err
	}
	if !nd.Lost() {
		return errdefs.Conflict("node_not_lost", "node %s heartbeat %s ago and is not lost: stop it before removing it", name, nd.HeartbeatAge.Round(time.Second))
	}
	// Every tenant's sandboxes: the caller is an admin of the fleet.
	failed, err := n.cfg.Sandboxes.Abandon(tenancy.System(ctx), name)
	if err != nil {
		return err
	}
	if err := n.cfg.Store.DeleteNode(ctx, name); err != nil {
		return err
	}
	n.log.Warn("node removed: its sandboxes failed", "removed", name, "sandboxes", failed)
	return nil
}

// toAPI shows a node's row, with the leases it holds.
func toAPI(nd *store.Node, leases []store.Lease) api.Node {
	out := api.Node{
		Name: nd.Name, Advertise: nd.Advertise, State: string(nd.State), Drivers: nd.Drivers, Labels: nd.Labels,
		CPUs: nd.Load.CPUs, MemoryBytes: nd.Load.MemoryBytes, CommittedMemoryBytes: nd.Load.CommittedMemoryBytes,
		Running: nd.Load.Running, DrainDeadline: nd.DrainDeadline, StartedAt: nd.StartedAt, HeartbeatAt: nd.HeartbeatAt,
		HeartbeatAgeMS: nd.HeartbeatAge.Milliseconds(),
	}
	if nd.Lost() {
		out.State = api.NodeLost
	}
	for _, l := range leases {
		if l.HeldBy(nd.Name) {
			out.Leases = append(out.Leases, l.Name)
		}
	}
	slices.Sort(out.Leases)
	return out
}
