package agentclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// TunnelProtocol is the Upgrade token of the agent's GET /tunnel/{port}.
const TunnelProtocol = "hutch-tunnel"

// Codes of the errors Tunnel returns when the agent refuses.
const (
	// CodePortClosed: nothing listens on the port in the sandbox (the agent
	// answered 502).
	CodePortClosed = "port_closed"
	// CodePreviewsUnsupported: the sandbox has no network of its own (the
	// process driver), so the agent opens no tunnels (501).
	CodePreviewsUnsupported = "previews_unsupported"
	// CodeTooManyTunnels: the agent's tunnels are all in use (503).
	CodeTooManyTunnels = "too_many_tunnels"
)

// tunnelHandshakeTimeout bounds the upgrade when ctx has no deadline.
const tunnelHandshakeTimeout = 10 * time.Second

// Tunnel opens a TCP connection to 127.0.0.1:port inside the sandbox: a
// fresh connection to the agent carries one signed upgrade request, the
// agent's proof is checked on its 101 answer, and the connection is then
// the sandbox's port, byte for byte. ctx bounds the handshake only; the
// caller closes the connection. It supports CloseWrite.
//
// A refusal is an errdefs error: CodePortClosed (class ErrUnavailable)
// when nothing listens, CodePreviewsUnsupported (ErrUnsupported),
// CodeTooManyTunnels, or agent_unreachable / agent_unverified as for every
// other call.
func (c *Client) Tunnel(ctx context.Context, port int) (_ net.Conn, retErr error) {
	if port < 1 || port > 65535 {
		return nil, errdefs.Invalid("invalid_port", "port %d is not from 1 to 65535", port)
	}
	conn, err := c.dialOwn(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			conn.Close()
		}
	}()
	// ctx ends the handshake through the deadline it sets once done, so
	// an error after that is the context's; without a deadline of its
	// own, the handshake gets tunnelHandshakeTimeout.
	if _, ok := ctx.Deadline(); !ok {
		conn.SetDeadline(time.Now().Add(tunnelHandshakeTimeout))
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	// A tunnel is a connection of its own, HTTP/1.1 upgraded, whatever
	// the protocol: its bytes pass straight through, with no HTTP/2
	// framing or flow control between the preview and the port.
	// An agent that can hands over the socket it dialled instead
	// (passed.go): then no byte of the preview passes through it.
	var q url.Values
	var src io.Reader = conn
	var fds *fdReader
	if uc, ok := conn.(*net.UnixConn); ok && c.Has(agentproto.FeatureTunnelFD) {
		q = url.Values{"pass": {"fd"}}
		fds = &fdReader{uc: uc}
		defer fds.closeAll()
		src = fds
	}
	br := bufio.NewReader(src)
	resp, err := c.upgrade(ctx, conn, br, "/tunnel/"+strconv.Itoa(port), q, "tunnel request")
	if err != nil {
		return nil, err
	}
	if !stop() {
		// ctx ended during the handshake: the deadline is already past.
		return nil, ctx.Err()
	}
	if fds != nil && resp.Header.Get(agentproto.HeaderTunnel) == agentproto.TunnelPassed {
		conn.Close()
		return fds.take()
	}
	conn.SetDeadline(time.Time{})
	return &TunnelConn{Conn: conn, r: br}, nil
}

// dialOwn opens a connection to the agent of its own (a tunnel's, an
// egress stream's), the failure an errdefs error.
func (c *Client) dialOwn(ctx context.Context) (net.Conn, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "agent_unreachable", err, "the sandbox's agent is unreachable")
	}
	return conn, nil
}

// upgrade sends a signed GET path?q on conn, upgrading to
// TunnelProtocol, and reads the answer's head through br: a 101 whose
// proof is the agent's, or the agent's refusal as an errdefs error; what
// names the request in messages.
func (c *Client) upgrade(ctx context.Context, conn net.Conn, br *bufio.Reader, path string, q url.Values, what string) (*http.Response, error) {
	req, nonce, err := c.newRequest(context.WithoutCancel(ctx), http.MethodGet, path, q, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", TunnelProtocol)
	resp, err := roundTrip(conn, br, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "agent_unreachable", err, "the sandbox's agent did not answer the %s", what)
	}
	if !agentproto.Equal(resp.Header.Get(agentproto.HeaderProof), agentproto.Proof(c.token, nonce)) {
		return nil, errdefs.New(errdefs.ErrUnavailable, "agent_unverified", "the peer at the agent's address did not prove it is this sandbox's agent")
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		if resp.StatusCode < 300 {
			return nil, errdefs.New(errdefs.ErrUnavailable, "agent_bad_answer", "the agent answered a %s with %d", what, resp.StatusCode)
		}
		return nil, answerError(resp)
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), TunnelProtocol) {
		return nil, errdefs.New(errdefs.ErrUnavailable, "agent_bad_answer", "the agent switched to %q, not %s", resp.Header.Get("Upgrade"), TunnelProtocol)
	}
	return resp, nil
}

// roundTrip writes req and reads the answer's head.
func roundTrip(conn net.Conn, br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(br, req)
}

// IsPortClosed reports whether err says nothing listens on the port.
func IsPortClosed(err error) bool { return hasCode(err, CodePortClosed) }

// IsPreviewsUnsupported reports whether err says the sandbox's agent opens
// no tunnels.
func IsPreviewsUnsupported(err error) bool { return hasCode(err, CodePreviewsUnsupported) }

func hasCode(err error, code string) bool {
	var e *errdefs.Error
	return errors.As(err, &e) && e.Code == code
}

// TunnelConn is an upgraded connection (a tunnel, an egress stream); reads first drain what the
// handshake's reader already buffered.
type TunnelConn struct {
	net.Conn
	r *bufio.Reader
}

func (t *TunnelConn) Read(p []byte) (int, error) {
	if t.r != nil {
		if t.r.Buffered() > 0 {
			return t.r.Read(p)
		}
		t.r = nil
	}
	return t.Conn.Read(p)
}

// CloseWrite shuts the sending side: the sandbox's program reads EOF.
func (t *TunnelConn) CloseWrite() error {
	if cw, ok := t.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
