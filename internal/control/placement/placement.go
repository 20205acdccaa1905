// Package placement chooses the node a new sandbox is made on, in a
// fleet of nodes on one store (the node registry, store.Nodes). The
// policy, simple on purpose: among the nodes that are active (a fresh
// heartbeat, not draining), have the driver asked for and carry every
// label asked for (api.CreateSandboxRequest.NodeLabels), the one with
// the most memory room (capacity less what its sandboxes' limits
// promise), ties to the one with the fewest sandboxes, then by name.
//
// Placement only chooses: the chosen node admits the sandbox against its
// tenant's quotas and its own capacity in its own admission
// (internal/control/sandbox's admission.fits reads the node's usage from
// the store), so two nodes that chose the same node at once cannot
// overfill it: the second create that would pass its capacity is
// refused there (503 insufficient_capacity).
//
// A node may die between its last heartbeat and the moment it is judged
// lost (store.LostAfter): a create the chosen node cannot be reached for
// is placed again without it (Place's skip), each node tried once.
package placement

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Candidate is a node as placement weighs it.
type Candidate struct {
	Name    string
	Drivers []string
	Labels  map[string]string
	// Active: heartbeat fresh and not draining.
	Active bool
	// MemoryRoomMB is its capacity less what its sandboxes' limits
	// promise.
	MemoryRoomMB int64
	Sandboxes    int
}

// Choose returns the node policy picks for a sandbox of driver ("": the
// nodes' default, which every node has) and labels, or 503
// no_node_available when none fits.
func Choose(nodes []Candidate, driver string, labels map[string]string) (string, error) {
	var best *Candidate
	for i := range nodes {
		n := &nodes[i]
		if !n.Active || (driver != "" && !slices.Contains(n.Drivers, driver)) || !has(n.Labels, labels) {
			continue
		}
		if best == nil || better(n, best) {
			best = n
		}
	}
	if best == nil {
		return "", errdefs.Unavailable("no_node_available",
			"no active node has driver %q and labels %s with room; GET /v1/nodes lists them", cmp.Or(driver, "(default)"), show(labels))
	}
	return best.Name, nil
}

func better(a, b *Candidate) bool {
	if a.MemoryRoomMB != b.MemoryRoomMB {
		return a.MemoryRoomMB > b.MemoryRoomMB
	}
	if a.Sandboxes != b.Sandboxes {
		return a.Sandboxes < b.Sandboxes
	}
	return a.Name < b.Name
}

// has reports whether labels include every one of want.
func has(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func show(labels map[string]string) string {
	if len(labels) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(k + "=" + labels[k])
	}
	return b.String()
}

// Placer places creates on the nodes of the store's registry.
type Placer struct {
	// Nodes is the registry.
	Nodes store.Nodes
	// Self is this node's name: where a create goes while the registry
	// holds no node at all (a fleet whose nodes have not registered yet
	// is one node).
	Self string
}

// Place returns the node a sandbox req asks for is made on, passing over
// the nodes in skip (those a create was already sent to and could not
// reach).
func (p *Placer) Place(ctx context.Context, req api.CreateSandboxRequest, skip []string) (string, error) {
	if len(req.NodeLabels) > store.MaxNodeLabels {
		return "", errdefs.Invalid("invalid_node_labels", "node_labels holds at most %d labels", store.MaxNodeLabels)
	}
	rows, err := p.Nodes.ListNodes(tenancy.System(ctx))
	if err != nil {
		return "", err
	}
	if len(rows) == 0 && len(req.NodeLabels) == 0 && !slices.Contains(skip, p.Self) {
		return p.Self, nil
	}
	nodes := Candidates(rows)
	for i := range nodes {
		if slices.Contains(skip, nodes[i].Name) {
			nodes[i].Active = false
		}
	}
	return Choose(nodes, req.Driver, req.NodeLabels)
}

// Candidates weighs the registry's rows.
func Candidates(rows []*store.Node) []Candidate {
	out := make([]Candidate, len(rows))
	for i, n := range rows {
		out[i] = Candidate{
			Name:         n.Name,
			Drivers:      n.Drivers,
			Labels:       n.Labels,
			Active:       n.State == store.NodeActive && !n.Lost(),
			MemoryRoomMB: (n.Load.MemoryBytes - n.Load.CommittedMemoryBytes) >> 20,
			Sandboxes:    n.Load.Running,
		}
	}
	return out
}
