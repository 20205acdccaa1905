package agentclient

import (
	"context"
	"net/http"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// ListeningSocket is one TCP socket listening in the sandbox, as the
// agent's GET /ports reports it (internal/agent/tunnel.ListeningSocket).
type ListeningSocket struct {
	Port int `json:"port"`
	// Family is "ipv4" or "ipv6" (the socket's: a dual-stack [::] is
	// "ipv6").
	Family string `json:"family"`
	// Address is the bound address: "127.0.0.1", "::1", "0.0.0.0", "::".
	Address string `json:"address"`
	// Scope is "loopback", "any" or "other".
	Scope string `json:"scope"`
}

// ListeningPorts lists the TCP sockets listening in the sandbox, by port,
// without the agent's egress forwarder. An agent without
// agentproto.FeaturePorts is not asked: the error is agent_too_old
// (ErrUnsupported); one whose loopback is not the sandbox's own (the
// process driver) answers CodePreviewsUnsupported (ErrUnsupported).
func (c *Client) ListeningPorts(ctx context.Context) ([]ListeningSocket, error) {
	if !c.Has(agentproto.FeaturePorts) {
		return nil, c.tooOld("listing the ports listening in the sandbox", agentproto.FeaturePorts)
	}
	var out struct {
		Ports []ListeningSocket `json:"ports"`
	}
	if err := c.doJSON(ctx, http.MethodGet, "/ports", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Ports, nil
}
