package events

import "sync"

// Notifier wakes a tenant's event streams when this server appends to the
// tenant's log, and when the store tells of another control plane's
// appends (Log.StoreChanged). A wake carries no event: a stream reads the
// store after the last id it sent, so wakes may be coalesced and nothing
// is lost. Streams also read the store on a timer, for a store that
// tells nothing and a telling that was lost.
//
// Lifecycle: a stream calls Subscribe, waits on its Subscription's Wake
// and Closes it when it ends; whoever appends an event calls Notify after
// the append commits. A nil *Notifier is valid: it never wakes anyone, so
// streams fall back to their timer. How many streams a tenant may hold
// is its quota's (internal/control/quota). Safe for concurrent use.
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

// Subscribe registers a stream of tenantID's events.
func (n *Notifier) Subscribe(tenantID string) *Subscription {
	if n == nil {
		return &Subscription{tenant: tenantID}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	subs := n.subs[tenantID]
	if subs == nil {
		subs = map[*Subscription]struct{}{}
		n.subs[tenantID] = subs
	}
	s := &Subscription{n: n, tenant: tenantID, wake: make(chan struct{}, 1)}
	subs[s] = struct{}{}
	return s
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
		s.poke()
	}
}

// NotifyAll wakes every stream of every tenant.
func (n *Notifier) NotifyAll() {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, subs := range n.subs {
		for s := range subs {
			s.poke()
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

// poke wakes the stream unless a wake is already waiting.
func (s *Subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

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
