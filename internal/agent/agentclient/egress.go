package agentclient

import (
	"bufio"
	"context"
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// AcceptEgress waits for the sandbox to open a connection to its egress
// forwarder (agentproto.EgressAddr) and returns it: a fresh connection
// to the agent carries one signed GET /egress, upgraded once the agent
// has a connection to carry, its proof checked on the 101 answer
// (tunnel.EgressStreams). It waits until ctx ends, which leaves nothing
// behind; the caller closes what it returns. For an agent whose envelope
// asked for egress streams (agentproto.FeatureEgressStreams).
func (c *Client) AcceptEgress(ctx context.Context) (_ *TunnelConn, retErr error) {
	conn, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "agent_unreachable", err, "the sandbox's agent is unreachable")
	}
	defer func() {
		if retErr != nil {
			conn.Close()
		}
	}()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	req, nonce, err := c.newRequest(context.WithoutCancel(ctx), http.MethodGet, "/egress", nil, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", TunnelProtocol)
	br := bufio.NewReader(conn)
	resp, err := roundTrip(conn, br, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "agent_unreachable", err, "the sandbox's agent did not answer the egress stream")
	}
	if !agentproto.Equal(resp.Header.Get(agentproto.HeaderProof), agentproto.Proof(c.token, nonce)) {
		return nil, errdefs.New(errdefs.ErrUnavailable, "agent_unverified", "the peer on the agent's address did not prove it is this sandbox's agent")
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		return nil, answerError(resp)
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), TunnelProtocol) {
		return nil, errdefs.New(errdefs.ErrUnavailable, "agent_bad_answer", "the agent switched to %q, not %s", resp.Header.Get("Upgrade"), TunnelProtocol)
	}
	if !stop() {
		return nil, ctx.Err() // ctx ended as the answer came: conn is closed
	}
	return &TunnelConn{Conn: conn, r: br}, nil
}
