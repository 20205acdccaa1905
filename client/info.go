package client

import (
	"context"
	"net/http"

	"github.com/hutchdev/hutch/api"
)

// Health calls GET /healthz, which needs no API key, and returns nil when
// the server answers 200. It is what a caller polls while a server starts.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// Info returns the server's version, driver, isolation level, anything
// degraded, its templates, limits and features.
func (c *Client) Info(ctx context.Context) (*api.Info, error) {
	var out api.Info
	if err := c.do(ctx, http.MethodGet, "/v1/info", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
