package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
)

// Event streams are the event routes asked for with Accept:
// text/event-stream. A stream sends every stored event after its cursor,
// oldest first, then waits; whenever an event of the tenant is appended,
// by this server or, on a store that tells (store.Notifier), by another
// replica (events.Notifier), and every eventStreamPoll in any case, it
// reads the log again after the last id it sent. Ids increase in
// commit order, so each read starts exactly where the last one ended:
// nothing is skipped or sent twice, whether an event was committed during
// the catch-up, by this server or by another replica.
//
// A stream holds one page of events at a time and writes it to the client
// before reading the next, so a slow client slows its own stream and
// nothing else; a client that takes no bytes for eventWriteTimeout loses
// its stream.

// Tunables of event streams; variables so tests can shorten them. How
// many streams a tenant may hold open is its quota's (streams.go).
var (
	// eventStreamPoll is how often a stream reads the store without being
	// woken: how it learns of events another replica appended while the
	// store's telling was lost (until its resync wakes every stream).
	eventStreamPoll = 5 * time.Second
	// eventStreamHeartbeat is how long a stream stays silent before it
	// sends a comment line.
	eventStreamHeartbeat = sseHeartbeat
	// eventWriteTimeout bounds one write to a stream's client.
	eventWriteTimeout = time.Minute
)

// streamEvents answers an event route as a stream of the events matching
// q. The Last-Event-ID header, when set, replaces q.After; q.Limit is
// ignored.
func (a *API) streamEvents(w http.ResponseWriter, r *http.Request, q events.Query) {
	ctx := r.Context()
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if err := events.CheckAfter(id); err != nil {
			a.writeError(w, r, errdefs.Invalid("invalid_cursor", "Last-Event-ID must be the id of an event"))
			return
		}
		q.After = id
	}
	q.Limit = 0
	release, ok := a.holdStream(w, r)
	if !ok {
		return
	}
	defer release()
	p, _ := tenancy.From(ctx)
	sub := a.cfg.Events.Notifier().Subscribe(p.TenantID)
	defer sub.Close()

	sse, err := newSSE(w)
	if err != nil {
		return
	}
	defer func() { _ = sse.rc.SetWriteDeadline(time.Time{}) }()
	poll := time.NewTicker(eventStreamPoll)
	defer poll.Stop()
	idle := time.NewTimer(eventStreamHeartbeat)
	defer idle.Stop()
	for {
		sent, err := a.sendEvents(ctx, sse, &q)
		if err != nil {
			return
		}
		if sent {
			idle.Reset(eventStreamHeartbeat)
		}
		if !a.waitForEvents(ctx, sse, sub, poll, idle) {
			return
		}
	}
}

// sendEvents writes every stored event after q.After, a page at a time,
// advancing q.After past each one written. It reports whether it wrote
// any. A failed read is logged (the client only sees its stream end, and
// reconnects); a failed write is the client gone.
func (a *API) sendEvents(ctx context.Context, sse *sseWriter, q *events.Query) (bool, error) {
	sent := false
	for {
		page, err := a.cfg.Events.List(ctx, *q)
		if err != nil {
			if ctx.Err() == nil {
				p, _ := tenancy.From(ctx)
				a.cfg.Log.Warn("event stream: read events", logattr.Tenant(p.TenantID), "after", q.After, "err", err)
			}
			return sent, err
		}
		for _, e := range page.Events {
			if err := writeWithin(sse, func() error { return sse.event(e.ID, e.Type, e) }); err != nil {
				return sent, err
			}
			q.After = e.ID
			sent = true
		}
		if page.NextCursor == "" {
			return sent, nil
		}
	}
}

// waitForEvents blocks until the store is worth reading again (a wake or
// the poll timer), sending heartbeats while it waits. It returns false
// when the stream must end: the client left, a write failed or the server
// is draining (ctx: the server's one drain context is its base).
func (a *API) waitForEvents(ctx context.Context, sse *sseWriter, sub *events.Subscription, poll *time.Ticker, idle *time.Timer) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-sub.Wake():
			return true
		case <-poll.C:
			return true
		case <-idle.C:
			if writeWithin(sse, sse.heartbeat) != nil {
				return false
			}
			idle.Reset(eventStreamHeartbeat)
		}
	}
}

// writeWithin runs one write to the stream's client under
// eventWriteTimeout. A connection that cannot take deadlines is written
// without one.
func writeWithin(sse *sseWriter, write func() error) error {
	_ = sse.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
	return write()
}
