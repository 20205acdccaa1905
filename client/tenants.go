package client

import (
	"context"
	"net/http"
	"net/url"

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

// GetTenant returns a tenant: the key's own, or any with an admin key.
func (c *Client) GetTenant(ctx context.Context, id string) (*api.Tenant, error) {
	var out api.Tenant
	if err := c.do(ctx, http.MethodGet, tenantPath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TenantQuotas returns a tenant's quotas and its usage against them: the
// key's own tenant's, or any with an admin key.
func (c *Client) TenantQuotas(ctx context.Context, id string) (*api.TenantQuotas, error) {
	var out api.TenantQuotas
	if err := c.do(ctx, http.MethodGet, tenantPath(id)+"/quotas", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetTenantQuotas replaces a tenant's quotas; it needs an admin key. A nil
// field follows the server's default, 0 is no limit.
func (c *Client) SetTenantQuotas(ctx context.Context, id string, q api.Quotas) (*api.TenantQuotas, error) {
	var out api.TenantQuotas
	if err := c.do(ctx, http.MethodPut, tenantPath(id)+"/quotas", nil, q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func tenantPath(id string) string { return "/v1/tenants/" + url.PathEscape(id) }
