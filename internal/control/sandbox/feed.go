package sandbox

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/store"
)

// Backoff of a broken event feed's reconnects.
const (
	feedRetryMin = 100 * time.Millisecond
	feedRetryMax = 10 * time.Second
)

// followFeed follows the event feed of a sandbox's agent from attach (or
// its first background process) until the service lets go of it, and
// records a process.exited event for each exit it pushes: one stream per
// sandbox in place of one waiting request per process (an agent that has
// the feed). The feed starts from the agent's retained events, so exits
// while no control plane listened (a restart) are recorded too, once:
// those already in the store are skipped. With once, a follower already
// running, or a client that is no longer lv's, leaves things as they are.
func (s *Service) followFeed(lv *live, rec *store.Sandbox, a *agentclient.Client, once bool) {
	w := &s.procs
	w.start()
	ctx, cancel := context.WithCancel(w.ctx)
	lv.mu.Lock()
	if once && (lv.stopFeed != nil || lv.client != a) {
		lv.mu.Unlock()
		cancel()
		return
	}
	old := lv.stopFeed
	lv.stopFeed, lv.feed = cancel, true
	lv.mu.Unlock()
	if old != nil {
		old()
	}
	w.wg.Go(func() {
		defer cancel()
		var after uint64
		wait := feedRetryMin
		for first := true; ctx.Err() == nil; first = false {
			if f, err := a.Events(ctx, after); err == nil {
				n := after
				after = s.readFeed(ctx, rec, f, after, first)
				f.Close()
				if after > n {
					wait = feedRetryMin
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
				wait = min(2*wait, feedRetryMax)
			}
		}
	})
}

// readFeed records the exits f pushes until it breaks, and returns the
// number of the last event read. The events replayed when the feed opens
// are checked against the store when replay is set (the first opening).
func (s *Service) readFeed(ctx context.Context, rec *store.Sandbox, f *agentclient.Feed, after uint64, replay bool) uint64 {
	var recorded map[procKey]bool
	var replayedTo uint64
	for {
		ev, err := f.Next()
		if err != nil {
			return after
		}
		switch {
		case ev.Hello:
			if ev.Seq < after {
				// Not the agent this feed followed: start again.
				after = 0
			}
			if replay {
				replayedTo = ev.Seq
				if recorded, err = s.recordedExits(ctx, rec); err != nil {
					s.log.Warn("read process events for the event feed", logattr.Sandbox(rec.ID), "err", err)
				}
			}
		case ev.Exited != nil:
			p := *ev.Exited
			if ev.Seq > replayedTo || !recorded[procKey{rec.ID, p.PID, p.StartedAt.UTC()}] {
				s.emitExited(ctx, rec, p)
			}
		}
		after = max(after, ev.Seq)
	}
}

// ensureFeed follows the event feed of sandbox rec's agent a, attached by
// this service, unless it is followed already: before the sandbox's
// first background process starts, whose exit the feed reports (an exit
// before the feed opens is in its replay).
func (s *Service) ensureFeed(rec *store.Sandbox, a *agentclient.Client) {
	if !a.HasEvents() || rec.Node != s.cfg.Node {
		return // no feed, or another server's sandbox, whose feed it follows
	}
	if lv := s.lookup(rec.ID); lv != nil {
		s.followFeed(lv, rec, a, true)
	}
}
