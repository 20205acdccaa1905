package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// The checks and normalisation every implementation applies before a write.

// CheckTenant validates a new tenant and normalises it: CreatedAt now if
// zero, State active if empty (a new tenant is never anything else).
func CheckTenant(t *Tenant) error {
	if t.ID == "" {
		return errdefs.Invalid("invalid_tenant", "a tenant needs an id")
	}
	if t.Name == "" {
		return errdefs.Invalid("invalid_tenant", "a tenant needs a name")
	}
	if t.State != "" && t.State != api.TenantActive {
		return errdefs.Invalid("invalid_tenant", "a new tenant is active, not %s", t.State)
	}
	if t.Deletion != nil {
		return errdefs.Invalid("invalid_tenant", "a new tenant has no deletion")
	}
	t.State = api.TenantActive
	t.CreatedAt = orNow(t.CreatedAt)
	return nil
}

// CheckTenantState refuses a state that is not one of api's.
func CheckTenantState(s api.TenantState) error {
	switch s {
	case api.TenantActive, api.TenantSuspended, api.TenantDeleting, api.TenantDeleted:
		return nil
	}
	return errdefs.Invalid("invalid_tenant_state", "unknown tenant state %q", s)
}

// CheckKey validates k and normalises its times, setting CreatedAt to now if
// zero.
func CheckKey(k *Key) error {
	if k.ID == "" || k.TenantID == "" {
		return errdefs.Invalid("invalid_key", "a key needs an id and a tenant")
	}
	if !tenancy.ValidRole(k.Role) {
		return errdefs.Invalid("invalid_role", "role must be %q, %q or %q", api.RoleAdmin, api.RoleMember, api.RoleReader)
	}
	if len(k.Hash) == 0 {
		return errdefs.Invalid("invalid_key", "a key needs a hash")
	}
	k.CreatedAt = orNow(k.CreatedAt)
	k.LastUsedAt = TimePtr(k.LastUsedAt)
	return nil
}

// CheckKeyCreator checks that the caller of ctx may create k, and records
// the caller's key as its creator (set when empty; another is refused).
// The system may create any key, with any creator; a key only keys of its
// own role or below, and a reader none.
func CheckKeyCreator(ctx context.Context, k *Key) error {
	p, err := keyHandler(ctx, k.Role)
	switch {
	case err != nil || tenancy.IsSystem(ctx):
		return err
	case k.CreatedBy == "":
		k.CreatedBy = p.KeyID
	case k.CreatedBy != p.KeyID:
		return errdefs.Forbidden("wrong_creator", "a key is recorded as created by the key that creates it")
	}
	return nil
}

// CheckKeyDelete checks that the caller of ctx may delete a key of role:
// the system any, a key only keys of its own role or below, a reader none.
func CheckKeyDelete(ctx context.Context, role string) error {
	_, err := keyHandler(ctx, role)
	return err
}

// keyHandler is the principal of ctx once it is sure the caller may
// create or delete a key of role: the system may; a key may when it is a
// member's or an admin's and at least as strong as role.
func keyHandler(ctx context.Context, role string) (tenancy.Principal, error) {
	if tenancy.IsSystem(ctx) {
		return tenancy.Principal{}, nil
	}
	p, ok := tenancy.From(ctx)
	switch {
	case !ok:
		return p, errdefs.Forbidden("no_tenant", "no tenant in the request")
	case !p.Holds(api.RoleMember):
		return p, tenancy.RoleRequired(api.RoleMember)
	case !p.Holds(role):
		return p, tenancy.RoleRequired(role)
	}
	return p, nil
}

// CreatorRevoked is the answer when the key creating a key is no longer
// in the store: it was revoked while its request ran.
func CreatorRevoked() error {
	return errdefs.New(errdefs.ErrUnauthorized, "invalid_api_key", "invalid API key: it was revoked")
}

// LastAdminKey is the answer to a delete that would leave no admin key:
// no one could then create tenants, and hutch mints no new admin key
// after its first start.
func LastAdminKey() error {
	return errdefs.Conflict("last_admin_key",
		"this would revoke the last admin key: create another admin key first")
}

// CheckSandbox validates sb and normalises it in place so that it equals
// what a read returns: times in UTC to Precision (CreatedAt and UpdatedAt
// set to now if zero), empty maps and handle as nil.
func CheckSandbox(sb *Sandbox) error {
	if sb.ID == "" || sb.TenantID == "" {
		return errdefs.Invalid("invalid_sandbox", "a sandbox needs an id and a tenant")
	}
	if sb.State == "" {
		return errdefs.Invalid("invalid_sandbox", "a sandbox needs a state")
	}
	if sb.DiskBytes < 0 {
		return errdefs.Invalid("invalid_sandbox", "a sandbox's disk bytes cannot be negative")
	}
	sb.CreatedAt = orNow(sb.CreatedAt)
	sb.UpdatedAt = orNow(sb.UpdatedAt)
	sb.ExpiresAt = TimePtr(sb.ExpiresAt)
	if len(sb.Env) == 0 {
		sb.Env = nil
	}
	if len(sb.Labels) == 0 {
		sb.Labels = nil
	}
	if len(sb.Handle) == 0 {
		sb.Handle = nil
	}
	return nil
}

func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return Time(time.Now())
	}
	return Time(t)
}
