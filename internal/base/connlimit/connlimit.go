// Package connlimit caps the connections one client address may hold
// open on an HTTP server's listener at once, so that a client that opens
// hundreds of connections cannot take the server's descriptors from
// everybody else, and without letting it lock out the other clients at
// its own address (a key holder on the same host, behind the same NAT):
//
//   - at the cap, a new connection closes the client's oldest idle one
//     (idle between requests, or yet to send one), those that never
//     authenticated first; only when every one of them carries a request
//     (a stream, a WebSocket) is the new connection closed at once;
//   - a connection that has not authenticated (Authenticated: no request
//     on it showed a valid key) is closed after Config.AnonymousIdle
//     idle, a few seconds, rather than the server's IdleTimeout.
//
// An idle connection closed this way is closed as the server's own idle
// timeout closes one: a request its client sends at that moment fails,
// and HTTP clients send it again on a new connection.
//
// The server reports its connections' states to the listener through
// http.Server.ConnState and gives each request its connection through
// ConnContext; until a connection's state is reported it counts as busy,
// so a server that does not report them gets a plain cap.
package connlimit

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// logEvery bounds how often one address's refusals and evictions are
// logged.
const logEvery = 10 * time.Second

// Config is a listener's cap.
type Config struct {
	// PerClient is how many connections one remote IP address may hold
	// open at once; positive. Unix-socket clients share one count.
	PerClient int
	// AnonymousIdle, when positive, is how long a connection that has
	// not authenticated may sit idle before it is closed.
	AnonymousIdle time.Duration
	// Log is where refusals go (at most one line per address every 10 s);
	// nil discards them.
	Log *slog.Logger
}

// Listener is a net.Listener whose Accept keeps each client address
// under its cap. Its ConnState and ConnContext are the http.Server hooks
// of the same names.
type Listener struct {
	net.Listener
	cfg Config

	mu      sync.Mutex
	clients map[string]*client
}

// client is one address's open connections.
type client struct {
	conns  map[*conn]struct{}
	logged time.Time // the last warning about it
}

// New wraps ln under cfg.
func New(ln net.Listener, cfg Config) *Listener {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Listener{Listener: ln, cfg: cfg, clients: map[string]*client{}}
}

// Accept returns the next connection a client may open: under its cap,
// or in place of its oldest idle connection, which it closes.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: nc, l: l, key: clientKey(nc.RemoteAddr())}
		victim, ok := l.admit(c)
		if victim != nil {
			victim.Conn.Close()
		}
		if ok {
			return c, nil
		}
		nc.Close()
	}
}

// admit counts c in its client unless every one of the client's
// connections is busy; it returns the idle connection c replaces, which
// the caller closes.
func (l *Listener) admit(c *conn) (victim *conn, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cl := l.clients[c.key]
	if cl == nil {
		cl = &client{conns: map[*conn]struct{}{}}
		l.clients[c.key] = cl
	}
	if len(cl.conns) >= l.cfg.PerClient {
		victim = cl.oldestIdle()
		if victim == nil {
			l.warnLocked(cl, c.key, "connection refused: every connection of the client is busy and it holds its cap")
			return nil, false
		}
		l.warnLocked(cl, c.key, "closed the client's oldest idle connection: it holds its cap")
		l.dropLocked(victim)
	}
	cl.conns[c] = struct{}{}
	return victim, true
}

// oldestIdle is the connection of cl to close for a new one: the one
// idle longest of those that never authenticated, else of the others;
// nil when none is idle.
func (cl *client) oldestIdle() *conn {
	var best *conn
	for c := range cl.conns {
		if !c.idle() {
			continue
		}
		if best == nil || best.authed && !c.authed || best.authed == c.authed && c.since.Before(best.since) {
			best = c
		}
	}
	return best
}

func (l *Listener) warnLocked(cl *client, key, msg string) {
	if now := time.Now(); now.Sub(cl.logged) >= logEvery {
		cl.logged = now
		l.cfg.Log.Warn(msg, "client", key, "cap", l.cfg.PerClient)
	}
}

// dropLocked forgets c, once.
func (l *Listener) dropLocked(c *conn) {
	if c.gone {
		return
	}
	c.gone = true
	if c.timer != nil {
		c.timer.Stop()
	}
	cl := l.clients[c.key]
	delete(cl.conns, c)
	if len(cl.conns) == 0 {
		delete(l.clients, c.key)
	}
}

// ConnState is the http.Server hook: it learns which connections are
// idle, and starts the idle clock of one that has not authenticated.
func (l *Listener) ConnState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.gone {
		return
	}
	c.state, c.reported = s, true
	if !c.idle() {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	c.since = time.Now()
	if c.authed || l.cfg.AnonymousIdle <= 0 {
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(l.cfg.AnonymousIdle, func() { l.expire(c) })
	} else {
		c.timer.Reset(l.cfg.AnonymousIdle)
	}
}

// expire closes c if it has sat idle, never authenticated, for
// AnonymousIdle. (A timer that fired as it was reset finds it idle
// since less and leaves it.)
func (l *Listener) expire(c *conn) {
	l.mu.Lock()
	due := !c.gone && c.idle() && !c.authed && time.Since(c.since) >= l.cfg.AnonymousIdle
	l.mu.Unlock()
	if due {
		c.Close()
	}
}

type connKey struct{}

// ConnContext is the http.Server hook: it puts the connection in the
// context of its requests, for Authenticated.
func (l *Listener) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*conn); ok && c.l == l {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// Authenticated records that a request on the connection of ctx (a
// request's context, or one derived from it) showed a valid key: the
// connection then sits idle for the server's IdleTimeout, and is the last
// of its client's to be closed for a new one. Without a connection in ctx
// it does nothing.
func Authenticated(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*conn)
	if !ok {
		return
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.authed = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// Exempt records that a request on the connection of ctx proved it
// comes from a peer the server trusts, another node of its fleet, whose
// connections carry many clients' requests: the connection no longer
// counts toward its address's cap, nor is closed for a new one or for
// sitting idle anonymous. Without a connection in ctx it does nothing.
func Exempt(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*conn)
	if !ok {
		return
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.dropLocked(c)
}

// Open is how many connections of the client at addr are open.
func (l *Listener) Open(addr net.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cl := l.clients[clientKey(addr)]; cl != nil {
		return len(cl.conns)
	}
	return 0
}

func clientKey(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort().Addr().Unmap().WithZone("").String()
	}
	return a.Network()
}

// conn is one counted connection; it gives its place back when closed.
type conn struct {
	net.Conn
	l   *Listener
	key string

	// Under l.mu:
	state    http.ConnState
	reported bool        // state was reported: until then it is busy
	since    time.Time   // when it last became idle
	authed   bool        // Authenticated
	timer    *time.Timer // AnonymousIdle's, once armed
	gone     bool        // no longer counted
}

// idle reports whether c is between requests or yet to send one.
func (c *conn) idle() bool {
	return c.reported && (c.state == http.StateNew || c.state == http.StateIdle)
}

// ReadFrom and WriteTo hand a copy to the connection c counts, so that
// io.Copy between two sockets (an HTTP server's answer from a file or
// from another connection, a proxy's tunnel) keeps the kernel's
// sendfile and splice instead of a buffer in user space.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

func (c *conn) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := c.Conn.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{c.Conn})
}

// Close gives c's place back before it closes the socket, so that a
// client that saw its connection end may open another in its place.
func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
