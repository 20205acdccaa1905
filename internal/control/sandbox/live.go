package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// live is what the service keeps of a sandbox that runs, or is paused, on
// this server: its agent's client and handle, the calls in flight
// through the door and when it was last active, its open preview
// tunnels, its egress proxy, the follower of its agent's event feed, the
// out-of-memory kills last seen, its metric history and its record as
// last written or read. One is made when
// the service first attaches to the sandbox's agent (a create, start,
// restore or recovery) and closed, once, when the service lets go of the
// sandbox (a stop, destroy, failure or loss), so nothing kept of a
// sandbox outlives it and no teardown can forget a part. A pause
// suspends it: the parts that talk to the agent close, and the rest
// waits for the resume.
type live struct {
	id string

	mu sync.Mutex
	// client and handle are the agent's while attached; client is nil
	// while suspended (paused).
	client *agentclient.Client
	handle driver.Handle
	closed bool
	// since is when the service last attached to the agent: output the
	// agent counted before it is new to the idle policy.
	since  time.Time
	calls  int       // in flight through the door
	active time.Time // the last call began or ended, or the sandbox was busy
	// tunnels are the open preview tunnels, closed when the agent is let
	// go so that a paused sandbox's previews dial again (network.go).
	tunnels  map[*activeConn]bool
	egress   *egressConn        // its egress proxy, if its driver has a channel
	stopFeed context.CancelFunc // ends the follower of its agent's event feed
	// feed says the agent's event feed is followed while attached: from
	// the sandbox's first background process on, and after a recovery,
	// whose feed replays the exits no server saw. A sandbox that never
	// started one holds no stream, so its connection closes once idle.
	feed    bool
	oom     oomSeen
	kept    keptRecord // its record, for the door (records.go)
	metrics metricRing
}

// lookup is the live sandbox id, or nil.
func (s *Service) lookup(id string) *live {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lives[id]
}

// liveList is every live sandbox, for work over all of them.
func (s *Service) liveList() []*live {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*live, 0, len(s.lives))
	for _, lv := range s.lives {
		out = append(out, lv)
	}
	return out
}

// keep returns sandbox id's live value, made if there is none.
func (s *Service) keep(id string) *live {
	s.mu.Lock()
	defer s.mu.Unlock()
	lv := s.lives[id]
	if lv == nil {
		lv = &live{id: id, tunnels: map[*activeConn]bool{}}
		s.lives[id] = lv
	}
	return lv
}

// attach starts following a running sandbox's agent: a client kept for
// calls, its egress proxy, its event feed if it is followed (live.feed);
// its OOM kills are counted from now. It returns the client.
func (s *Service) attach(ctx context.Context, rec *store.Sandbox, d driver.Driver, h driver.Handle) *agentclient.Client {
	lv := s.keep(rec.ID)
	a := newAgentClient(h)
	now := time.Now()
	lv.mu.Lock()
	old := lv.client
	lv.client, lv.handle, lv.closed = a, h, false
	lv.since, lv.active = now, now // a new idle window
	cp := *rec
	lv.keep(&cp)
	lv.mu.Unlock()
	if old != nil {
		old.Close()
	}
	s.observeOOM(ctx, rec) // the count so far is the baseline, not news
	s.startEgress(ctx, lv, rec, d, h)
	lv.mu.Lock()
	feed := lv.feed
	lv.mu.Unlock()
	if feed && a.HasEvents() {
		s.followFeed(lv, rec, a, false)
	}
	return a
}

// adopt keeps a client for a running sandbox the service has not
// attached to (another server's, or one whose attach is under way), so
// that calls share one connection.
func (s *Service) adopt(id string, h driver.Handle) *live {
	lv := s.keep(id)
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if lv.client == nil && !lv.closed {
		lv.client, lv.handle = newAgentClient(h), h
	}
	return lv
}

// suspend lets go of a paused sandbox's agent: its client, egress proxy,
// event feed and tunnels close; calls in flight end as their connection
// does (409: paused). The rest is kept for the resume, which attaches
// again.
func (s *Service) suspend(id string) {
	if lv := s.lookup(id); lv != nil {
		lv.letGo(false)
	}
	s.events.FlushDrops(id)
}

// detach lets go of a sandbox for good: what the service kept of it is
// closed and forgotten. Calls in flight end when the driver stops the
// agent.
func (s *Service) detach(id string) {
	s.mu.Lock()
	lv := s.lives[id]
	delete(s.lives, id)
	s.mu.Unlock()
	if lv != nil {
		lv.letGo(true)
	}
	s.events.FlushDrops(id)
}

// letGo closes lv's agent parts, and marks it closed for good with
// forever. The tunnels close after the client is forgotten, so a tunnel
// opening meanwhile is refused (network.go).
func (lv *live) letGo(forever bool) {
	lv.mu.Lock()
	client, eg, stop := lv.client, lv.egress, lv.stopFeed
	lv.client, lv.egress, lv.stopFeed = nil, nil, nil
	lv.closed = lv.closed || forever
	open := lv.tunnels
	lv.tunnels = map[*activeConn]bool{}
	lv.mu.Unlock()
	if stop != nil {
		stop()
	}
	if eg != nil {
		eg.close()
	}
	if client != nil {
		client.Close()
	}
	for c := range open {
		c.Conn.Close()
	}
}

// touch records activity of sandbox id that made no call through the
// door (a preview's bytes), while it is attached.
func (lv *live) touch(at time.Time) {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if lv.client != nil {
		lv.active = at
	}
}
