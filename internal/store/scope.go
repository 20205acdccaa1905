package store

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// Scope is which tenants' rows a call may touch. Every implementation
// derives it from ctx with ScopeOf, so they all agree.
type Scope struct {
	// TenantID is the caller's tenant; empty for the system without a
	// principal.
	TenantID string
	// All is set for the system, which may cross tenants.
	All bool
	// Admin is set for an admin principal.
	Admin bool
}

// ScopeOf returns the scope of ctx, or an ErrForbidden error (code
// "no_tenant") when ctx has neither a principal nor the system's mark.
func ScopeOf(ctx context.Context) (Scope, error) {
	p, ok := tenancy.From(ctx)
	sys := tenancy.IsSystem(ctx)
	if !ok && !sys {
		return Scope{}, errdefs.Forbidden("no_tenant", "no tenant in the request")
	}
	return Scope{TenantID: p.TenantID, All: sys, Admin: ok && p.Role == api.RoleAdmin}, nil
}

// Sees reports whether the scope may touch a row of tenantID.
func (s Scope) Sees(tenantID string) bool {
	return s.All || s.TenantID == tenantID
}

// RequireSystem refuses every caller but the system (403 system_only).
func RequireSystem(ctx context.Context) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All {
		return SystemOnly()
	}
	return nil
}

// CheckAdminScope refuses anyone but an admin principal or the system.
func CheckAdminScope(ctx context.Context) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All && !sc.Admin {
		return AdminRequired()
	}
	return nil
}
