package tenancy

import (
	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// roles are the key roles, least powerful first: each holds every right
// of the ones before it.
var roles = []string{api.RoleReader, api.RoleMember, api.RoleAdmin}

// rank is role's place in roles; an unknown role ranks below every known one.
func rank(role string) int {
	for i, r := range roles {
		if r == role {
			return i
		}
	}
	return -1
}

// ValidRole reports whether role is a known role.
func ValidRole(role string) bool { return rank(role) >= 0 }

// Holds reports whether a key of role has every right of least: it is
// least or more powerful. An unknown role holds nothing, and nothing
// holds an unknown least.
func Holds(role, least string) bool {
	r, l := rank(role), rank(least)
	return r >= 0 && l >= 0 && r >= l
}

// Holds reports whether p's key has every right of least.
func (p Principal) Holds(least string) bool { return Holds(p.Role, least) }

// May returns nil when p may make a call that needs least: its role
// holds least (else RoleRequired), and, for anything beyond reading, its
// tenant is not suspended (else TenantSuspended).
func (p Principal) May(least string) error {
	if !p.Holds(least) {
		return RoleRequired(least)
	}
	if p.Suspended && least != api.RoleReader {
		return TenantSuspended()
	}
	return nil
}

// TenantSuspended is the answer to a suspended tenant's call that would
// change or start something: 403 tenant_suspended.
func TenantSuspended() error {
	return errdefs.Forbidden("tenant_suspended",
		"this tenant is suspended: its keys may read what it holds, but nothing starts or changes until an admin resumes it")
}

// RoleRequired is the answer when a key's role is below least: 403 with
// the code "<least>_required" (admin_required, member_required).
func RoleRequired(least string) error {
	switch least {
	case api.RoleAdmin:
		return errdefs.Forbidden("admin_required", "this needs an admin key")
	case api.RoleMember:
		return errdefs.Forbidden("member_required", "this changes something: it needs a member or admin key, not a reader key")
	}
	return errdefs.Forbidden(least+"_required", "this needs a %s key", least)
}
