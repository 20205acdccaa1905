package agentclient

import (
	"bufio"
	"context"
)

// AcceptEgress waits for the sandbox to open a connection to its egress
// forwarder (agentproto.EgressAddr) and returns it: a fresh connection
// to the agent carries one signed GET /egress, upgraded once the agent
// has a connection to carry, its proof checked on the 101 answer
// (tunnel.EgressStreams). It waits until ctx ends, which leaves nothing
// behind; the caller closes what it returns. For an agent whose envelope
// asked for egress streams (agentproto.FeatureEgressStreams).
func (c *Client) AcceptEgress(ctx context.Context) (_ *TunnelConn, retErr error) {
	conn, err := c.dialOwn(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			conn.Close()
		}
	}()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	br := bufio.NewReader(conn)
	if _, err := c.upgrade(ctx, conn, br, "/egress", nil, "egress stream"); err != nil {
		return nil, err
	}
	if !stop() {
		return nil, ctx.Err() // ctx ended as the answer came: conn is closed
	}
	return &TunnelConn{Conn: conn, r: br}, nil
}
