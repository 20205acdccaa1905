package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
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

// EventLog appends events to the store and wakes the event streams of
// their tenant: every event this server records goes through it, so
// streams see it at once rather than on their timer. The sandbox service,
// the secret store, the gateway and the router share one. It also holds
// each sandbox to its EventBudget (events_budget.go).
type EventLog struct {
	store    store.Store
	notifier *Notifier
	log      *slog.Logger
	budgets  budgets
}

// NewEventLog returns the event log of st, with DefaultEventBudget.
func NewEventLog(st store.Store) *EventLog {
	return NewEventLogWith(st, DefaultEventBudget, nil)
}

// NewEventLogWith returns the event log of st, with budget b for each
// sandbox; log nil means slog.Default().
func NewEventLogWith(st store.Store, b EventBudget, log *slog.Logger) *EventLog {
	if log == nil {
		log = slog.Default()
	}
	return &EventLog{store: st, notifier: NewNotifier(), log: log, budgets: budgets{cfg: b}}
}

// Notifier is what event streams subscribe to.
func (l *EventLog) Notifier() *Notifier { return l.notifier }

// AppendEvent appends e to its tenant's log (store.Store.AppendEvent, on
// ctx's scope) and wakes that tenant's event streams. An event of a
// sandbox beyond its budget is dropped and counted, not appended: that
// is not an error, and e.ID stays empty.
func (l *EventLog) AppendEvent(ctx context.Context, e *store.Event) error {
	tenant := e.TenantID // as the store decides it
	if !tenancy.IsSystem(ctx) || tenant == "" {
		p, _ := tenancy.From(ctx)
		tenant = p.TenantID
	}
	if !l.admit(e, tenant) {
		return nil
	}
	return l.append(ctx, e)
}

// append appends e past the budget.
func (l *EventLog) append(ctx context.Context, e *store.Event) error {
	if err := l.store.AppendEvent(ctx, e); err != nil {
		return err
	}
	l.notifier.Notify(e.TenantID)
	return nil
}
