package server

import (
	"context"
	"net/url"
	"os"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/store"
)

// openForward loads the cluster key ($HUTCH_CLUSTER_KEY or
// <data>/cluster.key) and builds the forwarder, which carries requests
// for other nodes' sandboxes to them and verifies those other nodes
// forward here. On a store that one node keeps to itself (SQLite) every
// sandbox is this node's and nothing is forwarded (p.forwarding unset); a
// shared store without a cluster key is warned of at start.
func (s *Server) openForward(_ context.Context, p *parts) error {
	key, err := forward.LoadKey(os.Getenv(forward.KeyEnv), s.cfg.DataDir)
	if err != nil {
		return err
	}
	reg, _ := store.Lookup(s.cfg.Store)
	p.forwarding = reg.NeedsDSN
	if p.forwarding && key == nil {
		s.log.Warn("no cluster key: requests for sandboxes other nodes run are answered 503 cluster_key_missing; give every node the same $HUTCH_CLUSTER_KEY or <data>/cluster.key (mode 0600)")
	}
	p.clusterKey = key
	p.forward = forward.New(forward.Config{Node: p.node, Key: key, Nodes: nodeURLs{p.store}, NodesTTL: time.Second, Log: s.log})
	s.onClose("node connections", func(context.Context) error { p.forward.Close(); return nil })
	return nil
}

// nodeURLs says where nodes are from the store's node registry: a node's
// Advertise, unless it missed its heartbeats.
type nodeURLs struct{ st store.Nodes }

func (n nodeURLs) URL(ctx context.Context, name string) (*url.URL, error) {
	node, err := n.st.GetNode(tenancy.System(ctx), name)
	if err != nil {
		return nil, err
	}
	if node.Lost() {
		return nil, errdefs.Unavailable("node_unavailable", "node %s missed its heartbeats for %s", name, node.HeartbeatAge.Round(time.Second))
	}
	if node.Advertise == "" {
		return nil, errdefs.Unavailable("node_unavailable", "node %s advertises no address", name)
	}
	return url.Parse(node.Advertise)
}
