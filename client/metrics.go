package client

import (
	"context"
	"net/http"

	"github.com/hutchdev/hutch/api"
)

// SandboxMetrics returns what a running or paused sandbox uses now (CPU,
// memory, tasks, disk, network) and a sample of every few seconds of its
// last minutes. Reading them does not resume a paused sandbox.
func (c *Client) SandboxMetrics(ctx context.Context, id string) (api.SandboxMetrics, error) {
	var m api.SandboxMetrics
	if id == "" {
		return m, errNoID
	}
	return m, c.do(ctx, http.MethodGet, sandboxPath(id, "metrics"), nil, nil, &m)
}
