package events

import (
	"errors"
	"sync"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// ErrTooManyStreams is found (errors.Is) in the error Subscribe returns
// when a tenant already holds as many streams as it may.
var ErrTooManyStreams = errors.New("too many event streams")

// Notifier wakes a tenant's event streams when this server appends to the
// tenant's log. A wake carries no event: a stream reads the store after
// the last id it sent, so wakes may be coalesced and nothing is lost.
// Events another control-plane replica appends wake nobody here; streams
// find those by also reading the store on a timer.
//
// Lifecycle: a stream calls Subscribe, waits on its Subscription's Wake
// and Closes it when it ends; whoever appends an event calls Notify after
// the append commits. A nil *Notifier is valid: it never wakes anyone and
// bounds nothing, so streams fall back to their timer. Safe for
// concurrent use.
type Notifier struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{} // tenant id → its streams
}

// NewNotifier returns a notifier with no streams.
func NewNotifier() *Notifier {
	return &Notifier{subs: map[string]map[*Subscription]struct{}{}}
}

// Subscription is one stream's registration with a Notifier.
type Subscription struct {
	n      *Notifier
	tenant string
	wake   chan struct{} // capacity 1: wakes coalesce
	once   sync.Once
}

// Subscribe registers a stream of tenantID's events. When the tenant
// already holds limit streams (limit > 0) it fails with an
// errdefs.ErrRateLimited error, code too_many_streams, that
// errors.Is(err, ErrTooManyStreams).
func (n *Notifier) Subscribe(tenantID string, limit int) (*Subscription, error) {
	if n == nil {
		return &Subscription{tenant: tenantID}, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	subs := n.subs[tenantID]
	if limit > 0 && len(subs) >= limit {
		return nil, &errdefs.Error{Class: errdefs.ErrRateLimited, Code: "too_many_streams",
			Message: "this tenant already has the most event streams open allowed; close one first", Err: ErrTooManyStreams}
	}
	if subs == nil {
		subs = map[*Subscription]struct{}{}
		n.subs[tenantID] = subs
	}
	s := &Subscription{n: n, tenant: tenantID, wake: make(chan struct{}, 1)}
	subs[s] = struct{}{}
	return s, nil
}

// Notify wakes every stream of tenantID. It never blocks: a stream that
// has not yet taken its last wake keeps that one.
func (n *Notifier) Notify(tenantID string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.subs[tenantID] {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Streams returns how many streams tenantID holds.
func (n *Notifier) Streams(tenantID string) int {
	if n == nil {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs[tenantID])
}

// Wake receives once after one or more Notify calls for the stream's
// tenant. It is nil, never ready, for a nil Notifier's subscriptions.
func (s *Subscription) Wake() <-chan struct{} { return s.wake }

// Close unregisters the stream. It may be called more than once.
func (s *Subscription) Close() {
	if s.n == nil {
		return
	}
	s.once.Do(func() {
		s.n.mu.Lock()
		defer s.n.mu.Unlock()
		subs := s.n.subs[s.tenant]
		delete(subs, s)
		if len(subs) == 0 {
			delete(s.n.subs, s.tenant)
		}
	})
}
