// Package events is the event log of every tenant: what happened to its
// sandboxes, apps, secrets and settings, appended by every part of the
// control plane through one Log and read by the API through it too (List,
// in the API's types; Notifier for its streams). The Log stores each
// event (the store keeps it), wakes the tenant's event streams at once
// (notify.go), holds each sandbox to a budget so that no sandbox floods
// its tenant's log (budget.go), and trims the log to the retention
// settings on a timer (retention.go).
//
// Lifecycle: New (no side effects), Run for the trim until its context
// ends, FlushDrops("") at shutdown so no count of dropped events is lost.
package events

import (
	"context"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Event is one entry of a tenant's log, as the parts of the control plane
// record it. The store keeps it as a store.Event, field for field.
type Event struct {
	ID        string // assigned by AppendEvent
	TenantID  string
	SandboxID string // empty for an event about the tenant
	// AppID marks an event of an app's log (GET /v1/apps/{id}/events).
	AppID   string
	Type    string // api.EventSandboxCreated, …
	Message string // safe to show a user
	// Data holds small details, as JSON: it reads back as encoding/json
	// decodes an object (numbers as float64); empty reads back nil.
	Data      map[string]any
	CreatedAt time.Time
}

// Query filters and pages List.
type Query struct {
	SandboxID string   // only this sandbox's events, if set
	AppID     string   // only this app's events, if set
	Types     []string // only events of one of these types, if any
	After     string   // only events after this event's id (a cursor; CheckAfter)
	Limit     int      // page size: 100 if <= 0, at most MaxLimit
}

// The bounds of a Query, which the API checks a request against.
const (
	// MaxLimit is the most events one page of List holds.
	MaxLimit = store.MaxLimit
	// MaxType is the longest event type.
	MaxType = store.MaxEventType
)

// CheckAfter validates a Query's After: empty, or an event's id (400
// invalid_cursor).
func CheckAfter(after string) error { return store.CheckAfter(after) }

// Config is what a Log applies.
type Config struct {
	// Budget bounds what one sandbox can put in the log; zero is
	// DefaultBudget.
	Budget Budget
	// Retention and MaxPerTenant bound each tenant's log: Run trims the
	// events older than Retention and, of each tenant's, all but the
	// newest MaxPerTenant. Zero keeps them.
	Retention    time.Duration
	MaxPerTenant int
	Log          *slog.Logger
}

// Log appends events to the store and wakes the event streams of their
// tenant: every event this server records goes through it, so streams
// see it at once rather than on their timer. The sandbox service, the
// apps, the secret store, the gateway and the router share one.
type Log struct {
	store    store.Events
	cfg      Config
	notifier *Notifier
	log      *slog.Logger
	budgets  budgets
}

// New returns the event log of st.
func New(st store.Events, cfg Config) *Log {
	if cfg.Budget == (Budget{}) {
		cfg.Budget = DefaultBudget
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Log{store: st, cfg: cfg, notifier: NewNotifier(), log: cfg.Log, budgets: budgets{cfg: cfg.Budget}}
}

// Notifier is what event streams subscribe to.
func (l *Log) Notifier() *Notifier { return l.notifier }

// AppendEvent appends e to its tenant's log (store.Events.AppendEvent, on
// ctx's scope), setting e's ID, TenantID and CreatedAt and normalising
// its Data as the store does, and wakes that tenant's event streams. A
// message longer than an event holds is cut, never between the bytes of
// a character. An event of a sandbox beyond its budget is dropped and
// counted, not appended: that is not an error, and e.ID stays empty.
func (l *Log) AppendEvent(ctx context.Context, e *Event) error {
	e.Message = truncate(e.Message, store.MaxEventMessage)
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
func (l *Log) append(ctx context.Context, e *Event) error {
	rec := store.Event(*e)
	if err := l.store.AppendEvent(ctx, &rec); err != nil {
		return err
	}
	*e = Event(rec)
	l.notifier.Notify(e.TenantID)
	return nil
}

// StoreChanged wakes the event streams of the tenant whose log c, a write
// the store told (store.Notifier), appended to: another control plane's
// appends reach this one's streams at once, not at their timer. A resync
// wakes every stream. This server's own appends come back too and wake
// their streams a second time, which costs each a read that finds
// nothing new.
func (l *Log) StoreChanged(_ context.Context, c store.Change) {
	switch c.Kind {
	case store.ChangeEvents:
		l.notifier.Notify(c.TenantID)
	case store.ChangeResync:
		l.notifier.NotifyAll()
	}
}

// List returns a page of the caller's tenant's events matching q, oldest
// first, as the API shows them, with the cursor of the next page: the id
// of the page's last event, or "" when the page held every match
// recorded so far (store.Events.ListEvents).
func (l *Log) List(ctx context.Context, q Query) (api.EventList, error) {
	evs, next, err := l.store.ListEvents(ctx, store.EventQuery(q))
	if err != nil {
		return api.EventList{}, err
	}
	out := api.EventList{Events: make([]api.Event, 0, len(evs)), NextCursor: next}
	for _, e := range evs {
		out.Events = append(out.Events, api.Event{ID: e.ID, SandboxID: e.SandboxID, AppID: e.AppID, Type: e.Type,
			Message: e.Message, Data: e.Data, CreatedAt: e.CreatedAt})
	}
	return out, nil
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
