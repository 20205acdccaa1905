package client

import (
	"context"
	"fmt"
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

// SuspendTenant suspends a tenant; it needs an admin key. The tenant's
// sandboxes are stopped and its keys may only read (others get 403
// tenant_suspended) until ResumeTenant. Its data stay.
func (c *Client) SuspendTenant(ctx context.Context, id string) (*api.Tenant, error) {
	return c.tenantCall(ctx, http.MethodPost, tenantPath(id)+"/suspend")
}

// ResumeTenant lifts a tenant's suspension; it needs an admin key. Its
// sandboxes stay stopped until it starts them.
func (c *Client) ResumeTenant(ctx context.Context, id string) (*api.Tenant, error) {
	return c.tenantCall(ctx, http.MethodPost, tenantPath(id)+"/resume")
}

// DeleteTenant deletes a tenant with everything it owns; it needs an
// admin key. The server answers at once: State is deleting while the
// deletion runs (its Deletion says how far it got), deleted once it is
// done, which every later call returns as it is. A call on a deletion
// that stopped short runs it on. WaitTenantDeleted follows it.
func (c *Client) DeleteTenant(ctx context.Context, id string) (*api.Tenant, error) {
	return c.tenantCall(ctx, http.MethodDelete, tenantPath(id))
}

// WaitTenantDeleted polls a tenant being deleted until it is deleted and
// returns it, calling progress (when not nil) with each read. A deletion
// that stopped short (Deletion.Error) is an error saying why:
// DeleteTenant again runs it on from there.
func (c *Client) WaitTenantDeleted(ctx context.Context, id string, progress func(*api.Tenant)) (*api.Tenant, error) {
	var t *api.Tenant
	err := poll(ctx, func() (bool, error) {
		var err error
		if t, err = c.GetTenant(ctx, id); err != nil {
			return false, err
		}
		if progress != nil {
			progress(t)
		}
		if d := t.Deletion; t.State == api.TenantDeleting && d != nil && d.Error != "" {
			return false, fmt.Errorf("client: the deletion of tenant %s stopped short: %s", id, d.Error)
		}
		if t.State != api.TenantDeleting && t.State != api.TenantDeleted {
			return false, fmt.Errorf("client: tenant %s is %s, not being deleted", id, t.State)
		}
		return t.State == api.TenantDeleted, nil
	})
	return t, err
}

func (c *Client) tenantCall(ctx context.Context, method, path string) (*api.Tenant, error) {
	var out api.Tenant
	if err := c.do(ctx, method, path, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func tenantPath(id string) string { return "/v1/tenants/" + url.PathEscape(id) }
