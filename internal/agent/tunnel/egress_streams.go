package tunnel

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

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
	conn, client, err := switchProtocols(w)
	if err != nil {
		s.conn <- nil
		return
	}
	if client != io.Reader(conn) {
		// What the control plane sent after its request is the
		// sandbox's peer's, read ahead by the server.
		conn = &readAheadConn{Conn: conn, r: client}
	}
	s.conn <- conn
}

// readAheadConn reads through r: what the server read ahead, then the
// connection itself.
type readAheadConn struct {
	net.Conn
	r io.Reader
}

func (c *readAheadConn) Read(p []byte) (int, error) { return c.r.Read(p) }
