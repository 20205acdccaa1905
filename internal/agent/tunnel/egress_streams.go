package tunnel

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// EgressStreams carry a sandbox's egress to its control plane when the
// control plane cannot be dialled from the sandbox (a Pod on a cluster's
// network, whose control plane dials it): the control plane keeps a few
// requests open on the agent's API (GET /egress, an upgrade to
// TunnelProtocol), each of which waits until the sandbox opens a
// connection to its egress forwarder, then switches and carries that
// connection. The sandbox itself needs no route out; the control plane's
// proxy and its policy are its only way out, on whichever node looks
// after it.
type EgressStreams struct {
	waiting chan *egressStream
	log     *slog.Logger
}

// egressStream is one waiting request; the forwarder that takes it gets
// the upgraded connection on conn (nil when the switch failed).
type egressStream struct {
	conn chan net.Conn
}

// NewEgressStreams returns the streams, with no request waiting.
func NewEgressStreams(log *slog.Logger) *EgressStreams {
	return &EgressStreams{waiting: make(chan *egressStream), log: log}
}

// Routes adds GET /egress to mux.
func (e *EgressStreams) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /egress", e.handle)
}

// Dial is the forwarder's way to the control plane: the next waiting
// request, switched to carry one connection. It waits for one until ctx
// ends.
func (e *EgressStreams) Dial(ctx context.Context) (net.Conn, error) {
	var s *egressStream
	select {
	case s = <-e.waiting:
	case <-ctx.Done():
		return nil, errors.New("no egress stream from the control plane is open")
	}
	select {
	case c := <-s.conn:
		if c == nil {
			return nil, errors.New("the control plane's egress stream failed to switch")
		}
		return c, nil
	case <-ctx.Done():
		go func() { // the switch still lands; nobody takes it
			if c := <-s.conn; c != nil {
				c.Close()
			}
		}()
		return nil, errors.New("the control plane's egress stream did not switch in time")
	}
}

// handle waits, until its client goes, for the forwarder to take it,
// then switches protocols and hands the connection over.
func (e *EgressStreams) handle(w http.ResponseWriter, r *http.Request) {
	if !headerHasToken(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), TunnelProtocol) {
		httpio.WriteError(w, r, e.log, errdefs.Invalid("upgrade_required", "an egress stream is an upgrade to %s", TunnelProtocol))
		return
	}
	s := &egressStream{conn: make(chan net.Conn, 1)}
	select {
	case e.waiting <- s:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Connection", "Upgrade")
	w.Header().Set("Upgrade", TunnelProtocol)
	w.WriteHeader(http.StatusSwitchingProtocols)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.conn <- nil
		return
	}
	conn.SetDeadline(time.Time{})
	if err := brw.Flush(); err != nil {
		conn.Close()
		s.conn <- nil
		return
	}
	if n := brw.Reader.Buffered(); n > 0 {
		// What the control plane sent after its request is the
		// sandbox's peer's, read ahead by the server.
		b, _ := brw.Reader.Peek(n)
		s.conn <- &prefixConn{Conn: conn, prefix: append([]byte(nil), b...)}
		return
	}
	s.conn <- conn
}

// prefixConn reads prefix before its connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
