// Package nodes is this hutch serve as one node of a fleet on a shared
// store: it registers the node and heartbeats its load (heartbeat.go),
// follows the operator's drain of it (drain.go), takes back what others
// marked unavailable while it was cut off from the store (reclaim.go),
// takes the fleet lease
// and, while it holds it, runs the work done once per fleet (lease.go):
// the sandboxes of lost nodes marked unavailable (lost.go) and the event
// log's trim. It also serves GET /v1/nodes and the drain (service.go).
// docs/ARCHITECTURE.md, "Nodes and leases", says which work is the
// fleet's and which each node's.
//
// Lifecycle: New (no side effects), Register once at start, then Run
// until its context ends; Run returns once every goroutine it started
// has, and gives up the fleet lease on the way out.
package nodes

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// FleetLease is the lease whose holder runs the fleet-wide work.
const FleetLease = "fleet"

// LeaseTTL is how long the fleet lease outlives its holder's last
// renewal: a node that dies loses it within this.
const LeaseTTL = 10 * time.Second

// Config is what a node needs.
type Config struct {
	Store store.Store
	// Sandboxes is this node's sandbox service: its load, the creates a
	// drain refuses, the stops at a drain's deadline, and the lost
	// nodes' sandboxes marked unavailable.
	Sandboxes *sandbox.Service
	// Self is this node's row as it registers it: name, advertised URL,
	// drivers and labels (its load is read from Sandboxes).
	Self store.Node
	// Fleet is the work run only while this node holds the fleet lease,
	// besides the lost nodes' sweep: each function runs until its
	// context ends (the event log's trim).
	Fleet []func(context.Context)
	// Leave says every sandbox this node runs can be taken over by
	// another node (its drivers are all driver.Adopters): when Run ends
	// it leaves the fleet (store.LeaveNode), so the lease holder takes
	// them over at its next sweep instead of after store.LostAfter. A
	// node whose sandboxes run on its own machine does not: they wait
	// for it, re-attached when it restarts.
	Leave bool
	// Every is the heartbeat's and the lease's period; 0 is
	// store.HeartbeatEvery.
	Every time.Duration
	Log   *slog.Logger
}

// Node is this hutch serve in the fleet.
type Node struct {
	cfg Config
	log *slog.Logger
}

// New returns the node of cfg.
func New(cfg Config) (*Node, error) {
	if cfg.Store == nil || cfg.Sandboxes == nil || cfg.Self.Name == "" {
		return nil, errors.New("nodes: Store, Sandboxes and Self.Name are required")
	}
	if cfg.Every <= 0 {
		cfg.Every = store.HeartbeatEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Node{cfg: cfg, log: cfg.Log.With("node", cfg.Self.Name)}, nil
}

// Name is this node's name.
func (n *Node) Name() string { return n.cfg.Self.Name }

// Register writes this node's row, with its load, and takes up the state
// the operator left it in (a node drained before a restart stays
// draining).
func (n *Node) Register(ctx context.Context) error {
	ctx = tenancy.System(ctx)
	self := n.cfg.Self
	load, err := n.cfg.Sandboxes.NodeLoad(ctx)
	if err != nil {
		return err
	}
	self.Load = load
	row, err := n.cfg.Store.RegisterNode(ctx, self)
	if err != nil {
		return err
	}
	n.follow(row)
	return nil
}

// Run heartbeats and holds the fleet lease until ctx ends, then leaves
// the fleet if Config.Leave says so.
func (n *Node) Run(ctx context.Context) {
	ctx = tenancy.System(ctx)
	d := &drain{n: n}
	defer d.wait()
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.holdLease(ctx)
	}()
	n.heartbeat(ctx, d)
	<-done
	if n.cfg.Leave {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.Every)
		defer cancel()
		if err := n.cfg.Store.LeaveNode(lctx, n.cfg.Self.Name); err != nil {
			n.log.Warn("leave the fleet: other nodes take this one's sandboxes over once it counts as lost", "err", err)
			return
		}
		n.log.Info("left the fleet: another node takes this one's sandboxes over")
	}
}
