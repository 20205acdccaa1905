package store

import (
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// The checks and normalisation every implementation applies before a write.

// CheckTenant validates t and normalises its time, setting CreatedAt to now
// if zero.
func CheckTenant(t *Tenant) error {
	if t.ID == "" {
		return errdefs.Invalid("invalid_tenant", "a tenant needs an id")
	}
	if t.Name == "" {
		return errdefs.Invalid("invalid_tenant", "a tenant needs a name")
	}
	t.CreatedAt = orNow(t.CreatedAt)
	return nil
}

// CheckKey validates k and normalises its times, setting CreatedAt to now if
// zero.
func CheckKey(k *Key) error {
	if k.ID == "" || k.TenantID == "" {
		return errdefs.Invalid("invalid_key", "a key needs an id and a tenant")
	}
	if k.Role != api.RoleAdmin && k.Role != api.RoleMember {
		return errdefs.Invalid("invalid_role", "role must be %q or %q", api.RoleAdmin, api.RoleMember)
	}
	if len(k.Hash) == 0 {
		return errdefs.Invalid("invalid_key", "a key needs a hash")
	}
	k.CreatedAt = orNow(k.CreatedAt)
	k.LastUsedAt = TimePtr(k.LastUsedAt)
	return nil
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
