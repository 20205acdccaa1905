package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// NodeOf returns the node that runs the caller's sandbox id: the one
// whose drivers made it and which alone holds its agent's connection
// (internal/edge/forward carries other nodes' requests there). "" is a
// sandbox recorded before nodes, this node's, and one unavailable (its
// node lost), which any node answers as such. Another tenant's sandbox
// is 404 sandbox_not_found. It reads the record this service keeps for a
// second (records.go), so a request for a sandbox here costs no read;
// and of a sandbox not live here, its node as read last, kept a second
// as well (nodes), so a stream of requests another node serves costs a
// read a second, not one each.
func (s *Service) NodeOf(ctx context.Context, id string) (string, error) {
	if s.lookup(id) != nil {
		rec, err := s.record(ctx, id)
		if err != nil {
			return "", err
		}
		return nodeOf(rec.Node, rec.State), nil
	}
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return "", err
	}
	now := time.Now()
	if n, ok := s.nodes.get(id, sc, now); ok {
		return n, nil
	}
	gen := s.nodes.gen(id)
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return "", err
	}
	s.nodes.put(id, gen, keptNode{node: rec.Node, state: rec.State, tenantID: rec.TenantID, at: now})
	return nodeOf(rec.Node, rec.State), nil
}

// nodeOf is what NodeOf says of a sandbox of node in state.
func nodeOf(node string, state api.SandboxState) string {
	if state == api.StateUnavailable {
		return ""
	}
	return node
}

// maxKeptNodes bounds nodes: past it, expired entries go, and all of them
// if none had.
const maxKeptNodes = 1 << 16

// nodes keeps where the sandboxes not live on this server run, for
// NodeOf. A sandbox's node is written at its create and changes on no
// later write, but its state does (unavailable while its node is lost),
// so an entry is forgotten at any write of its sandbox: one through this
// service (updated), or one the store tells (StoreChanged), and on a
// resync all of them are; each serves recordTTL at most in any case. A
// read that a write overtakes is not kept: each of the shards an id
// hashes to counts the writes forgotten in it, and a read keeps its
// answer only when its shard's count did not move meanwhile.
type nodes struct {
	mu   sync.Mutex
	kept map[string]keptNode
	gens [64]uint64
}

// keptNode is what nodes keeps of one sandbox's record.
type keptNode struct {
	node     string
	state    api.SandboxState
	tenantID string
	at       time.Time
}

// shard is the shard of id: FNV-1a of its bytes.
func (n *nodes) shard(id string) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return int(h % uint32(len(n.gens)))
}

// get returns what NodeOf says of sandbox id when an entry is fresh at
// now and sc may see it.
func (n *nodes) get(id string, sc store.Scope, now time.Time) (string, bool) {
	n.mu.Lock()
	k, ok := n.kept[id]
	n.mu.Unlock()
	if !ok || now.Sub(k.at) >= recordTTL || !sc.Sees(k.tenantID) {
		return "", false
	}
	return nodeOf(k.node, k.state), true
}

// gen is the count of id's shard before a read of the store.
func (n *nodes) gen(id string) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gens[n.shard(id)]
}

// put keeps k for sandbox id unless a write was forgotten in its shard
// since gen.
func (n *nodes) put(id string, gen uint64, k keptNode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gens[n.shard(id)] != gen {
		return
	}
	if n.kept == nil {
		n.kept = map[string]keptNode{}
	}
	if len(n.kept) >= maxKeptNodes {
		for id, e := range n.kept {
			if k.at.Sub(e.at) >= recordTTL {
				delete(n.kept, id)
			}
		}
		if len(n.kept) >= maxKeptNodes {
			clear(n.kept)
		}
	}
	n.kept[id] = k
}

// forget drops sandbox id's entry, and any read of it under way.
func (n *nodes) forget(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gens[n.shard(id)]++
	delete(n.kept, id)
}

// forgetAll drops every entry, and every read under way.
func (n *nodes) forgetAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range n.gens {
		n.gens[i]++
	}
	clear(n.kept)
}
