package sandbox

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
	"github.com/hutchdev/hutch/internal/store"
)

// A sandbox's egress decisions are counted, not recorded one by one: a
// sandbox can make thousands a second, under any policy, none included.
// The first decision about a destination (host, port, verdict and
// reason) is recorded at once, with a count of 1, so a user sees it
// promptly; the ones after it are counted, and at the end of the window
// one event of the same type carries their count, bytes each way and the
// times of the first and last. A destination that was still busy stays
// counted through the next window (no new event at once); one quiet for a
// whole window is forgotten, and its next decision is recorded at once
// again. At most egressDests destinations are named at a time; the rest
// are counted together, per verdict, in one event with "other": true.
// The counts are written when the sandbox stops, is destroyed or the
// service closes. So one sandbox causes at most about 2×egressDests+2
// egress events per window, whatever it does.

// DefaultEgressWindow is the window of Config.EgressEventWindow zero.
const DefaultEgressWindow = 10 * time.Second

// egressDests is the number of destinations named per window.
const egressDests = 32

// egressKey is one destination and verdict; other is the bucket of the
// destinations beyond egressDests.
type egressKey struct {
	host    string
	port    uint16
	allowed bool
	reason  string
	other   bool
}

// egressCount is what was counted of one key in a window.
type egressCount struct {
	n           int64
	out, in     int64
	first, last time.Time
	reason      string // the last, for the other bucket
}

func (c *egressCount) add(now time.Time, out, in int64, reason string) {
	if c.n == 0 {
		c.first = now
	}
	c.n++
	c.out += out
	c.in += in
	c.last = now
	c.reason = reason
}

// egressTally counts one sandbox's egress decisions (one egress proxy's
// life). Lifecycle: add for each decision; a timer flushes each window;
// close flushes what is left, after which each decision is recorded on
// its own (the few of connections that outlive the proxy's listener).
type egressTally struct {
	s      *Service
	rec    *store.Sandbox
	window time.Duration

	flushMu sync.Mutex // one flush at a time, so close waits for the timer's

	mu     sync.Mutex
	counts map[egressKey]*egressCount // the destinations of this window; n == 0: nothing since the last event
	timer  *time.Timer                // while counts is not empty
	closed bool
}

func (s *Service) newEgressTally(rec *store.Sandbox) *egressTally {
	w := s.cfg.EgressEventWindow
	if w <= 0 {
		w = DefaultEgressWindow
	}
	return &egressTally{s: s, rec: rec, window: w, counts: map[egressKey]*egressCount{}}
}

// add is the egress proxy's netpolicy.Report.
func (t *egressTally) add(host string, port uint16, d netpolicy.Decision, out, in int64) {
	now := time.Now()
	k := egressKey{host: host, port: port, allowed: d.Allowed}
	if !d.Allowed {
		k.reason = d.Reason
	}
	t.mu.Lock()
	c := t.counts[k]
	switch {
	case t.closed:
	case c != nil:
		c.add(now, out, in, d.Reason)
		t.mu.Unlock()
		return
	case len(t.counts) < egressDests:
		t.counts[k] = &egressCount{}
		t.arm()
	default:
		k = egressKey{allowed: d.Allowed, other: true}
		if t.counts[k] == nil {
			t.counts[k] = &egressCount{}
		}
		t.counts[k].add(now, out, in, d.Reason)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	// The first of a destination, or one after close: recorded now.
	t.record(k, egressCount{n: 1, out: out, in: in, first: now, last: now, reason: d.Reason}, false)
}

// arm starts the window's timer if it is not running. t.mu is held.
func (t *egressTally) arm() {
	if t.timer == nil && !t.closed {
		t.timer = time.AfterFunc(t.window, t.tick)
	}
}

// tick ends a window: what was counted is recorded; busy destinations
// stay for the next window, quiet ones go.
func (t *egressTally) tick() {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.timer = nil
	pending := t.take(false)
	if len(t.counts) > 0 {
		t.arm()
	}
	t.mu.Unlock()
	t.recordAll(pending)
}

// close records what is counted and ends the tally. It waits for a
// flush in progress, so its events come before whatever the caller
// records next (the sandbox's stopped or destroyed).
func (t *egressTally) close() {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	pending := t.take(true)
	t.mu.Unlock()
	t.recordAll(pending)
}

type pendingCount struct {
	k egressKey
	c egressCount
}

// take removes what was counted from t: each key with a count, and
// every key when all is set, else the keys counted nothing since the
// last event. t.mu is held.
func (t *egressTally) take(all bool) []pendingCount {
	var out []pendingCount
	for k, c := range t.counts {
		if c.n > 0 {
			out = append(out, pendingCount{k, *c})
			*c = egressCount{}
			if !all && !k.other {
				continue // still busy: counted through the next window
			}
		}
		delete(t.counts, k)
	}
	return out
}

func (t *egressTally) recordAll(pending []pendingCount) {
	for _, p := range pending {
		t.record(p.k, p.c, true)
	}
}

// record appends one egress event of c's decisions about k; summary
// marks a count taken at the end of a window (or at close).
func (t *egressTally) record(k egressKey, c egressCount, summary bool) {
	dest := net.JoinHostPort(k.host, strconv.Itoa(int(k.port)))
	if k.other {
		dest = fmt.Sprintf("other destinations (more than %d in %s)", egressDests, t.window)
	}
	typ, verdict := api.EventEgressAllowed, "allowed"
	data := map[string]any{"count": c.n}
	if k.allowed {
		data["bytes_out"], data["bytes_in"] = c.out, c.in
	} else {
		typ, verdict = api.EventEgressDenied, "denied"
		data["reason"] = c.reason
	}
	if k.other {
		data["other"] = true
	} else {
		data["host"], data["port"] = k.host, k.port
	}
	msg := fmt.Sprintf("egress to %s %s", dest, verdict)
	if summary {
		msg += fmt.Sprintf(" %s within %s", times(c.n), t.window)
		data["first_at"], data["last_at"] = c.first.UTC().Format(time.RFC3339Nano), c.last.UTC().Format(time.RFC3339Nano)
		data["window_s"] = t.window.Seconds()
	}
	if !k.allowed {
		msg += ": " + c.reason
	}
	t.s.emit(tenancy.System(context.Background()), t.rec, typ, msg, data)
}

// times says n times in words.
func times(n int64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
