package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/hutchdev/hutch/internal/control/nodes"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// openNodes registers this server as a node of the fleet on the store
// and starts its heartbeat and its bid for the fleet lease, under which
// the fleet-wide work runs (the lost nodes' sandboxes marked
// unavailable, the event log's trim). It comes before the sandboxes
// recover, so the node heartbeats through a long recovery and no other
// node's sweep finds it lost and marks unavailable what it re-attaches,
// and before the API serves, so a drain left from before the restart
// refuses the first create.
func (s *Server) openNodes(ctx context.Context, p *parts) error {
	advertise, unusable := s.cfg.AdvertiseURL(s.addr.String())
	if reg, _ := store.Lookup(s.cfg.Store); unusable && reg.NeedsDSN {
		s.log.Warn("this node advertises an address other nodes cannot reach: set --advertise (HUTCH_ADVERTISE) to the URL they reach its API at",
			"advertise", advertise, "listen", s.cfg.Listen)
	}
	var drivers []string
	leave := true // every sandbox here can be taken over by another node
	for _, d := range p.drivers.Loaded() {
		drivers = append(drivers, d.Name())
		_, adopter := d.(driver.Adopter)
		leave = leave && adopter
	}
	n, err := nodes.New(nodes.Config{
		Store:     p.store,
		Sandboxes: p.sandboxes,
		Self:      store.Node{Name: p.node, Advertise: advertise, Drivers: drivers, Labels: s.cfg.NodeLabels},
		Fleet:     []func(context.Context){p.events.Run},
		Leave:     leave,
		Log:       s.log,
	})
	if err != nil {
		return err
	}
	if err := n.Register(ctx); err != nil {
		return fmt.Errorf("register node %s: %w", p.node, err)
	}
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { n.Run(run) })
	s.onClose("node", func(context.Context) error { stop(); wg.Wait(); return nil })
	p.nodes = n
	return nil
}
