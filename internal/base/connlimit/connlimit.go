// Package connlimit caps the connections one client address may hold
// open on a listener at once: a client that opens hundreds of idle
// connections cannot take the server's descriptors from everybody else.
// A connection over the cap is closed as soon as it is accepted.
package connlimit

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// logEvery bounds how often refusals of one address are logged.
const logEvery = 10 * time.Second

// Listener is a net.Listener whose Accept lets at most PerClient
// connections of one remote IP address be open at once. Unix-socket
// clients share one count.
type Listener struct {
	net.Listener
	perClient int
	log       *slog.Logger

	mu     sync.Mutex
	open   map[string]int
	logged map[string]time.Time
}

// New wraps ln; perClient must be positive.
func New(ln net.Listener, perClient int, log *slog.Logger) *Listener {
	return &Listener{Listener: ln, perClient: perClient, log: log, open: map[string]int{}, logged: map[string]time.Time{}}
}

// Accept returns the next connection of a client under its cap.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr())
		if l.take(key) {
			return &conn{Conn: c, release: func() { l.release(key) }}, nil
		}
		c.Close()
	}
}

func (l *Listener) take(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] >= l.perClient {
		if now := time.Now(); now.Sub(l.logged[key]) >= logEvery {
			l.logged[key] = now
			l.log.Warn("connection refused: the client holds its cap of open connections", "client", key, "cap", l.perClient)
		}
		return false
	}
	l.open[key]++
	return true
}

func (l *Listener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
		delete(l.logged, key)
	}
}

// Open is how many connections of the client at addr are open.
func (l *Listener) Open(addr net.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[clientKey(addr)]
}

func clientKey(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort().Addr().Unmap().WithZone("").String()
	}
	return a.Network()
}

// conn gives its place back once, when closed.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
