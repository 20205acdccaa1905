package router

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"syscall"
	"time"
)

// maxResponseHead bounds the head of an app's answer (and of the 1xx
// answers before it that no one reads): the app is the sandbox's, so
// nothing it sends may grow the control plane's memory without end.
const maxResponseHead = 1 << 20

// tunnelTransport carries the proxy's requests to sandboxes. A request
// that is one exchange of heads, GET, HEAD or OPTIONS without a body or an
// upgrade (nearly every request a page makes), goes over a pooled tunnel
// in the handler's own goroutine: the request is written, the answer's
// head read and its body handed to the proxy, and the tunnel goes back to
// the pool once the body has been read to its end. http.Transport, which
// carries everything else (bodies, upgrades), runs a reader and a writer
// goroutine per connection and hands every request and answer between
// them and the handler: at a few thousand requests a second, those
// wake-ups cost more than the rest of the request in the router.
//
// A pooled tunnel is not watched while idle: the app may have closed it
// (a keep-alive timeout) or the sandbox stopped. A request that finds its
// reused tunnel closed before any answer came is sent again on another
// tunnel, as http.Transport does with idempotent requests; these are.
type tunnelTransport struct {
	rt  *Router
	std *http.Transport // requests with a body, upgrades, other methods

	mu    sync.Mutex
	idle  map[string][]*tunnel // by tunnel host, the most recently used last
	nIdle int
	sweep *time.Timer // closes tunnels idle for idleTunnelAfter; nil when none are idle
}

// tunnel is one connection to a sandbox's port.
type tunnel struct {
	conn   net.Conn
	lr     limitReader // conn, read under a limit while a head is read
	br     *bufio.Reader
	bw     *bufio.Writer
	host   string
	idleAt time.Time
	reused bool
}

// limitReader reads r, failing once n bytes have been read; got counts
// what was read since it was last reset.
type limitReader struct {
	r   io.Reader
	n   int64
	got int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadTooLong
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	l.got += int64(n)
	return n, err
}

var errHeadTooLong = fmt.Errorf("router: the app's answer has a head of more than %d bytes", maxResponseHead)

// aLongTimeAgo is a deadline that has passed: it ends a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// onePass reports whether req is carried over a pooled tunnel in the
// handler's goroutine.
func onePass(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	return (req.Body == nil || req.Body == http.NoBody) && req.ContentLength == 0 && upgradeType(req.Header) == ""
}

// RoundTrip implements http.RoundTripper.
func (t *tunnelTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !onePass(req) {
		return t.std.RoundTrip(req)
	}
	ctx := req.Context()
	for {
		tn, err := t.get(ctx, req.URL.Host)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(tn, req)
		if err == nil {
			return resp, nil
		}
		tn.conn.Close()
		// Another idle tunnel, or a new one once the pool has none.
		if !tn.reused || !errors.Is(err, errClosedIdle) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// errClosedIdle: a reused tunnel was closed before any answer came.
var errClosedIdle = errors.New("router: the tunnel was closed while idle")

// exchange writes req on tn and reads the head of its answer. The answer's
// body, read to its end, puts tn back in the pool; an error leaves tn to
// the caller to close.
func (t *tunnelTransport) exchange(tn *tunnel, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	// The context's end ends whatever read or write is under way.
	stop := context.AfterFunc(ctx, func() { tn.conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	tn.lr.n, tn.lr.got = maxResponseHead, 0
	if err := req.Write(tn.bw); err != nil {
		if tn.reused {
			err = fmt.Errorf("%w: %w", errClosedIdle, err)
		}
		return fail(err)
	}
	if err := tn.bw.Flush(); err != nil {
		if tn.reused {
			err = fmt.Errorf("%w: %w", errClosedIdle, err)
		}
		return fail(err)
	}
	trace := httptrace.ContextClientTrace(ctx)
	var resp *http.Response
	for {
		var err error
		if resp, err = http.ReadResponse(tn.br, req); err != nil {
			// (ReadResponse says io.ErrUnexpectedEOF for no answer at all.)
			if tn.lr.got == 0 && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
				err = fmt.Errorf("%w: %w", errClosedIdle, err)
			}
			return fail(err)
		}
		code := resp.StatusCode
		if code >= 200 || code == http.StatusSwitchingProtocols {
			break
		}
		// 1xx (103 Early Hints): the proxy passes them on to the client.
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return fail(err)
			}
			tn.lr.n = maxResponseHead
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("router: the app switched protocols on a request without an upgrade"))
	}
	tn.lr.n = math.MaxInt64
	resp.Body = &tunnelBody{t: t, tn: tn, body: resp.Body, stop: stop, reuse: !resp.Close}
	return resp, nil
}

// tunnelBody is an answer's body; read to its end, it puts its tunnel
// back in the pool.
type tunnelBody struct {
	t     *tunnelTransport
	tn    *tunnel
	body  io.ReadCloser
	stop  func() bool
	reuse bool // the answer lets the tunnel carry another request
	done  bool
}

func (b *tunnelBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

func (b *tunnelBody) Close() error {
	if !b.done {
		// An answer without a body (HEAD, 204, 304) ends where it starts.
		b.finish(b.body == http.NoBody)
	}
	return nil
}

func (b *tunnelBody) finish(atEOF bool) {
	b.done = true
	// stop is false when the request's context ended: the deadline it
	// set has spoilt the tunnel.
	if b.stop() && atEOF && b.reuse {
		b.t.put(b.tn)
		return
	}
	b.tn.conn.Close()
}

// get returns an idle tunnel to host, or dials one.
func (t *tunnelTransport) get(ctx context.Context, host string) (*tunnel, error) {
	t.mu.Lock()
	if l := t.idle[host]; len(l) > 0 {
		tn := l[len(l)-1]
		l[len(l)-1] = nil
		t.idle[host] = l[:len(l)-1]
		if len(l) == 1 {
			delete(t.idle, host)
		}
		t.nIdle--
		t.mu.Unlock()
		tn.reused = true
		return tn, nil
	}
	t.mu.Unlock()
	conn, err := t.rt.dialTunnel(ctx, "tcp", host+":80")
	if err != nil {
		return nil, err
	}
	tn := &tunnel{conn: conn, host: host}
	tn.lr.r = conn
	tn.br = bufio.NewReaderSize(&tn.lr, 4<<10)
	tn.bw = bufio.NewWriterSize(conn, 4<<10)
	return tn, nil
}

// put keeps tn for another request, within the pool's bounds.
func (t *tunnelTransport) put(tn *tunnel) {
	tn.idleAt = time.Now()
	t.mu.Lock()
	if len(t.idle[tn.host]) >= idleTunnels || t.nIdle >= idleTunnelsAll {
		t.mu.Unlock()
		tn.conn.Close()
		return
	}
	if t.idle == nil {
		t.idle = map[string][]*tunnel{}
	}
	t.idle[tn.host] = append(t.idle[tn.host], tn)
	t.nIdle++
	if t.sweep == nil {
		t.sweep = time.AfterFunc(idleTunnelAfter, t.closeStale)
	}
	t.mu.Unlock()
}

// closeStale closes the tunnels idle for idleTunnelAfter, and comes back
// while any are idle.
func (t *tunnelTransport) closeStale() {
	now := time.Now()
	var stale []*tunnel
	t.mu.Lock()
	oldest := now
	for host, l := range t.idle {
		// Oldest first: the ones idle too long are a prefix.
		i := 0
		for i < len(l) && now.Sub(l[i].idleAt) >= idleTunnelAfter {
			i++
		}
		stale = append(stale, l[:i]...)
		if i == len(l) {
			delete(t.idle, host)
			continue
		}
		t.idle[host] = append(l[:0], l[i:]...)
		if l[0].idleAt.Before(oldest) {
			oldest = l[0].idleAt
		}
	}
	t.nIdle -= len(stale)
	t.sweep = nil
	if t.nIdle > 0 {
		t.sweep = time.AfterFunc(oldest.Add(idleTunnelAfter).Sub(now), t.closeStale)
	}
	t.mu.Unlock()
	for _, tn := range stale {
		tn.conn.Close()
	}
}

// CloseIdleConnections closes every idle tunnel, both pools'.
func (t *tunnelTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nIdle = nil, 0
	if t.sweep != nil {
		t.sweep.Stop()
		t.sweep = nil
	}
	t.mu.Unlock()
	for _, l := range idle {
		for _, tn := range l {
			tn.conn.Close()
		}
	}
	t.std.CloseIdleConnections()
}
