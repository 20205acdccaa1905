package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

// The change feed (store.Notifier). Migration 0002's triggers NOTIFY
// changesChannel inside each write's transaction, so Postgres tells a
// change only once it commits, to every session listening on the
// database, in commit order. The Store listens on one connection of its
// own, outside its pools (a pooled connection would be handed to other
// work between waits), from its first Subscribe to its Close, and hands
// each notification to every subscriber.
//
// A notification sent while no session of this Store listened is lost:
// when the connection fails (an error, or no answer to a ping after
// feedIdle without a notification) the feed connects again, waiting
// feedBackoff after a failed try and twice as long after each next one
// up to feedMaxBackoff, LISTENs, and only then tells every subscriber
// ChangeResync, so what they read after dropping what they keep is at
// least as new as anything the feed missed.
//
// The loop is written here on pgx rather than taken from
// github.com/jackc/pgxlisten, which waits a fixed time before each
// reconnect, never pings an idle connection, and has no release.

// changesChannel is the channel migration 0002's triggers notify.
const changesChannel = "hutch_changes"

// feedApp is the application_name of the feed's connection, so
// pg_stat_activity tells it from the pools'.
const feedApp = "hutch changes"

// Tunables of the feed: variables so tests can shorten them.
var (
	// feedIdle is how long the feed waits for a notification before it
	// pings its connection: a connection gone without a word (a host
	// lost, a half-open TCP) is found within feedIdle and feedPing.
	feedIdle = 30 * time.Second
	// feedPing bounds a ping, and closing the connection.
	feedPing = 5 * time.Second
	// feedBackoff is the wait after a failed connect, doubled after each
	// next failure up to feedMaxBackoff.
	feedBackoff    = 100 * time.Millisecond
	feedMaxBackoff = 5 * time.Second
)

var _ store.Notifier = (*Store)(nil)

// Subscribe implements store.Notifier. The first subscription connects
// the feed and LISTENs before it returns; a failure is its error.
func (s *Store) Subscribe(ctx context.Context, fn func(context.Context, store.Change)) (stop func(), err error) {
	return s.changes.subscribe(ctx, fn)
}

// feed is the listening connection and its subscribers.
type feed struct {
	cfg *pgx.ConnConfig // of the feed's connection

	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	stop   context.CancelFunc // ends run; nil until the first subscription
	done   chan struct{}      // closed when run has ended
	closed bool
}

// subscriber is one Subscribe's fn.
type subscriber struct {
	fn func(context.Context, store.Change)
}

// newFeed returns the feed of the database cfg connects to; it connects
// at its first subscription.
func newFeed(cfg *pgx.ConnConfig) *feed {
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = feedApp
	return &feed{cfg: cfg, subs: map[*subscriber]struct{}{}}
}

// errFeedClosed answers a Subscribe after Close.
var errFeedClosed = errors.New("the store is closed")

// subscribe adds fn, starting the feed if it is the first.
func (f *feed) subscribe(ctx context.Context, fn func(context.Context, store.Change)) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errFeedClosed
	}
	if f.stop == nil {
		conn, err := f.connect(ctx)
		if err != nil {
			return nil, fmt.Errorf("listen for changes: %w", err)
		}
		rctx, stop := context.WithCancel(context.Background())
		f.stop, f.done = stop, make(chan struct{})
		go f.run(rctx, conn)
	}
	sub := &subscriber{fn: fn}
	f.subs[sub] = struct{}{}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, sub)
	}, nil
}

// close ends the feed and waits for its goroutine; it may be called
// before the feed started.
func (f *feed) close() {
	f.mu.Lock()
	f.closed = true
	stop, done := f.stop, f.done
	f.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// connect opens the feed's connection and LISTENs on it.
func (f *feed) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, f.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		closeConn(ctx, conn)
		return nil, err
	}
	return conn, nil
}

// run hands on what conn, and each connection after it, receives, until
// ctx ends.
func (f *feed) run(ctx context.Context, conn *pgx.Conn) {
	defer close(f.done)
	for {
		lost := f.listen(ctx, conn)
		if conn = f.reconnect(ctx); conn == nil {
			return
		}
		f.deliver(ctx, store.Change{Kind: store.ChangeResync, Err: lost})
	}
}

// listen delivers every notification conn receives until it fails or
// ctx ends, then closes it, and returns why it stopped.
func (f *feed) listen(ctx context.Context, conn *pgx.Conn) error {
	defer closeConn(ctx, conn)
	for {
		wctx, cancel := context.WithTimeout(ctx, feedIdle)
		n, err := conn.WaitForNotification(wctx)
		idle := wctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			f.deliver(ctx, parseChange(n.Payload))
		case idle && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, feedPing)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("ping the change feed's connection: %w", err)
			}
		default:
			return fmt.Errorf("wait for changes: %w", err)
		}
	}
}

// reconnect connects again, trying at once and then after a backoff that
// grows to feedMaxBackoff; it returns nil once ctx ends.
func (f *feed) reconnect(ctx context.Context) *pgx.Conn {
	for wait := feedBackoff; ; wait = min(2*wait, feedMaxBackoff) {
		if ctx.Err() != nil {
			return nil
		}
		if conn, err := f.connect(ctx); err == nil {
			return conn
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// deliver calls every subscriber with c.
func (f *feed) deliver(ctx context.Context, c store.Change) {
	if c.Kind == "" {
		return
	}
	f.mu.Lock()
	subs := make([]*subscriber, 0, len(f.subs))
	for sub := range f.subs {
		subs = append(subs, sub)
	}
	f.mu.Unlock()
	for _, sub := range subs {
		sub.fn(ctx, c)
	}
}

// closeConn closes conn, bounded by feedPing even after ctx ended.
func closeConn(ctx context.Context, conn *pgx.Conn) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), feedPing)
	defer cancel()
	_ = conn.Close(cctx)
}

// payload is a notification's JSON, as migration 0002 writes it.
type payload struct {
	Kind    store.ChangeKind `json:"kind"`
	Tenant  string           `json:"tenant"`
	Key     string           `json:"key"`
	Sandbox string           `json:"sandbox"`
	Rev     int64            `json:"rev"`
}

// parseChange is the Change a notification tells: none (Kind "") for a
// kind this binary does not know, which a newer one may send, and
// ChangeResync for a payload it cannot read, since a change may be in
// it.
func parseChange(s string) store.Change {
	var p payload
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return store.Change{Kind: store.ChangeResync, Err: fmt.Errorf("read a change %q: %w", s, err)}
	}
	switch p.Kind {
	case store.ChangeKey, store.ChangeTenant, store.ChangeSandbox, store.ChangeEvents:
		return store.Change{Kind: p.Kind, TenantID: p.Tenant, KeyID: p.Key, SandboxID: p.Sandbox, Rev: p.Rev}
	}
	return store.Change{}
}
