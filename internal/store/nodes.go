package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Nodes is the registry of the nodes that serve one fleet: every hutch
// serve on the store registers itself at start and heartbeats its load
// every few seconds. Whether a node is alive is judged by the age of its
// last heartbeat on the store's clock (Postgres's now(), not any node's),
// so clocks that disagree between machines never make a node look lost.
//
// A node's State is the operator's (DrainNode, ActivateNode), never the
// node's: neither
// RegisterNode nor HeartbeatNode changes it, so a draining node stays
// draining across its heartbeats and its restarts. A removed node's row
// is not made again by its heartbeat (ErrNotFound), only by its next
// start.
//
// Reads are for an admin or the system; the writes a node makes of its
// own row (register, heartbeat) are the system's; DrainNode,
// ActivateNode and DeleteNode are an admin's or the system's.
type Nodes interface {
	// RegisterNode writes n's row, made or replaced bar its State and
	// DrainDeadline (a new row is NodeActive), with StartedAt and
	// HeartbeatAt now on the store's clock, and returns the row as
	// stored.
	RegisterNode(ctx context.Context, n Node) (*Node, error)
	// HeartbeatNode sets name's HeartbeatAt to now on the store's clock
	// and its Load to load, and returns the row (its State included, so
	// the node learns of a drain). A node without a row is
	// ErrNotFound (node_not_found): removed, it stays removed.
	HeartbeatNode(ctx context.Context, name string, load NodeLoad) (*Node, error)
	// LeaveNode sets name's HeartbeatAt back past LostAfter, so that
	// the node reads lost at once: it is shutting down and every sandbox
	// it has can be taken over by another node (sandbox.Service.Adopt),
	// which need not wait out its silence. Its next RegisterNode or
	// HeartbeatNode makes it alive again. A node without a row is
	// ErrNotFound.
	LeaveNode(ctx context.Context, name string) error
	// GetNode returns one node.
	GetNode(ctx context.Context, name string) (*Node, error)
	// ListNodes returns every node, by name.
	ListNodes(ctx context.Context) ([]*Node, error)
	// DrainNode sets name's State to NodeDraining with deadline (nil:
	// none, its sandboxes are left to finish) and returns the row. A
	// node already draining takes the new deadline.
	DrainNode(ctx context.Context, name string, deadline *time.Time) (*Node, error)
	// ActivateNode ends name's drain: its State is NodeActive again, with
	// no DrainDeadline. It returns the row.
	ActivateNode(ctx context.Context, name string) (*Node, error)
	// DeleteNode removes name's row: for a node gone for good. Its
	// sandboxes' records stay, naming it.
	DeleteNode(ctx context.Context, name string) error
}

// NodeState is what the operator wants of a node.
type NodeState string

// The states of a node's row. Lost is not one: it is read from the
// heartbeat's age (Node.Lost).
const (
	// NodeActive: it takes new sandboxes.
	NodeActive NodeState = "active"
	// NodeDraining: it takes no new sandboxes, and stops the ones it
	// runs at its DrainDeadline, if it has one.
	NodeDraining NodeState = "draining"
)

// LostAfter is how old a node's last heartbeat may be before the node
// counts as lost: five heartbeats (HeartbeatEvery) missed.
const LostAfter = 10 * time.Second

// HeartbeatEvery is how often a node heartbeats.
const HeartbeatEvery = 2 * time.Second

// Node is one node's row.
type Node struct {
	Name string
	// Advertise is the base URL other nodes reach this node's API at.
	Advertise string
	// Drivers are the drivers it loaded, by name.
	Drivers []string
	// Labels are the operator's (hutch serve --node-label).
	Labels map[string]string
	// Load is its capacity and load as last reported.
	Load          NodeLoad
	State         NodeState
	DrainDeadline *time.Time
	StartedAt     time.Time
	HeartbeatAt   time.Time
	// HeartbeatAge is how long before the read HeartbeatAt was, on the
	// store's clock. Set by the reads; never written.
	HeartbeatAge time.Duration
}

// Lost reports whether n's last heartbeat is older than LostAfter.
func (n *Node) Lost() bool { return n.HeartbeatAge > LostAfter }

// NodeLoad is a node's capacity and load, as it reports them.
type NodeLoad struct {
	// CPUs and MemoryBytes are what its sandboxes may be given together.
	CPUs        float64
	MemoryBytes int64
	// CommittedMemoryBytes is the memory its sandboxes' limits promise.
	CommittedMemoryBytes int64
	// Running is how many sandboxes it runs (paused ones included).
	Running int
}

// MaxNodeName and MaxNodeLabels bound a node's row.
const (
	MaxNodeName   = 128
	MaxNodeLabels = 64
)

// CheckNode validates what RegisterNode is asked to write.
func CheckNode(n Node) error {
	if n.Name == "" || len(n.Name) > MaxNodeName {
		return errdefs.Invalid("invalid_node", "a node's name must be 1-%d bytes", MaxNodeName)
	}
	if len(n.Labels) > MaxNodeLabels {
		return errdefs.Invalid("invalid_node", "a node has at most %d labels", MaxNodeLabels)
	}
	return nil
}

// NodeNotFound is the answer for a node without a row.
func NodeNotFound(name string) error {
	return errdefs.NotFound("node_not_found", "node %q not found", name)
}
