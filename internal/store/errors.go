package store

import (
	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// The errors every implementation returns, so that codes never drift between
// backends.

// TenantNotFound is the answer for a tenant that is missing or not the
// caller's.
func TenantNotFound(id string) error {
	return errdefs.NotFound("tenant_not_found", "tenant %q not found", id)
}

// KeyNotFound is the answer for a key that is missing or not the caller's.
func KeyNotFound(id string) error {
	return errdefs.NotFound("key_not_found", "key %q not found", id)
}

// SandboxNotFound is the answer for a sandbox that is missing or not the
// caller's.
func SandboxNotFound(id string) error {
	return errdefs.NotFound("sandbox_not_found", "sandbox %q not found", id)
}

// TenantExists is the answer for a duplicate tenant id or name.
func TenantExists(name string) error {
	return errdefs.Conflict("tenant_exists", "a tenant with this id or the name %q already exists", name)
}

// KeyExists is the answer for a duplicate key id.
func KeyExists(id string) error {
	return errdefs.Conflict("key_exists", "key %q already exists", id)
}

// SandboxExists is the answer for a duplicate sandbox id.
func SandboxExists(id string) error {
	return errdefs.Conflict("sandbox_exists", "sandbox %q already exists", id)
}

// AdminRequired is the answer when a member asks for what only admins may do.
func AdminRequired() error {
	return errdefs.Forbidden("admin_required", "this needs an admin key")
}

// SystemOnly is the answer when a request asks for what only the control
// plane itself may do.
func SystemOnly() error {
	return errdefs.Forbidden("system_only", "only the control plane may do this")
}

// SandboxNotDestroyed is the answer to erasing the records of a tenant's
// sandboxes while one of them is not destroyed.
func SandboxNotDestroyed(id, tenantID string, state api.SandboxState) error {
	return errdefs.Conflict("sandbox_not_destroyed", "sandbox %s of tenant %s is %s: destroy it first", id, tenantID, state)
}
