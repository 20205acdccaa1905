package client

import (
	"context"
	"net/http"

	"github.com/hutchdev/hutch/api"
)

// CreateTenant creates a tenant; it needs an admin key. The answer's Key
// holds the tenant's first API key with its Secret, which the server never
// shows again.
func (c *Client) CreateTenant(ctx context.Context, req api.CreateTenantRequest) (*api.Tenant, error) {
	var out api.Tenant
	if err := c.do(ctx, http.MethodPost, "/v1/tenants", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
