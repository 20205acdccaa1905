// Package tenancy carries who is asking through a context. The auth
// middleware puts a Principal in; the store reads it and scopes every query
// to its tenant, so no handler can forget to. roles.go orders the key
// roles and says what a role, or a suspended tenant's key, lacks (May).
package tenancy

import "context"

// Principal is the caller: a tenant and the key it used.
type Principal struct {
	TenantID string
	KeyID    string
	Role     string // api.RoleAdmin, api.RoleMember or api.RoleReader (roles.go)
	// Suspended says its tenant was suspended when the key was checked:
	// it may read, and nothing else (May).
	Suspended bool
}

type principalKey struct{}
type systemKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the principal in ctx, if any.
func From(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok && p.TenantID != ""
}

// System returns ctx marked as the control plane's own work (start-up,
// recovery, reaping), which may cross tenants. Only server wiring and the
// lifecycle loops call it; no request path does.
func System(ctx context.Context) context.Context {
	return context.WithValue(ctx, systemKey{}, true)
}

// IsSystem reports whether ctx was marked by System.
func IsSystem(ctx context.Context) bool {
	v, _ := ctx.Value(systemKey{}).(bool)
	return v
}
