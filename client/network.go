package client

import (
	"context"
	"net/http"

	"github.com/hutchdev/hutch/api"
)

// Network returns a sandbox's egress policy and what went through it.
func (c *Client) Network(ctx context.Context, id string) (api.Network, error) {
	var n api.Network
	if id == "" {
		return n, errNoID
	}
	return n, c.do(ctx, http.MethodGet, sandboxPath(id, "network"), nil, nil, &n)
}

// SetNetwork changes a sandbox's egress policy; the next connection sees
// it.
func (c *Client) SetNetwork(ctx context.Context, id string, p api.NetworkPolicy) (api.Network, error) {
	var n api.Network
	if id == "" {
		return n, errNoID
	}
	return n, c.do(ctx, http.MethodPut, sandboxPath(id, "network"), nil, p, &n)
}
