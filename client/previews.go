package client

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
)

// Previews: the server serves http(s)://<port>-<sandbox id>.<preview
// domain>/ from 127.0.0.1:<port> inside the sandbox (HTTP, streams and
// WebSocket). A port is private until made public; a private preview lets
// in this client's API key (as a Bearer header) or a signed URL.

// PreviewURL signs a URL of a port's preview that lets its holder in, with
// no key, until the answer's ExpiresAt: ttl from now (an hour when zero, at
// most a day; rounded up to whole seconds), or until this client's key is
// revoked.
func (c *Client) PreviewURL(ctx context.Context, id string, port int, ttl time.Duration) (*api.PreviewURL, error) {
	if id == "" {
		return nil, errNoID
	}
	if ttl < 0 {
		return nil, fmt.Errorf("client: negative preview URL lifetime %s", ttl)
	}
	req := api.PreviewURLRequest{ExpiresInS: int((ttl + time.Second - 1) / time.Second)}
	var out api.PreviewURL
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "ports", strconv.Itoa(port), "url"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetPortPublic makes a port's preview public (no credentials needed) or
// private again. The setting outlives a restart of the server.
func (c *Client) SetPortPublic(ctx context.Context, id string, port int, public bool) (*api.Port, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.Port
	if err := c.do(ctx, http.MethodPut, sandboxPath(id, "ports", strconv.Itoa(port)), nil, api.PortRequest{Public: &public}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListPorts lists the sandbox's ports that have a setting, in port order.
func (c *Client) ListPorts(ctx context.Context, id string) (*api.PortList, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.PortList
	if err := c.do(ctx, http.MethodGet, sandboxPath(id, "ports"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
