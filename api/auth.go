package api

import "time"

// Key roles, each holding every right of the ones below it. A key can
// create and revoke only keys of its own role or below.
const (
	RoleAdmin  = "admin"  // a member's rights, and tenants and admin keys
	RoleMember = "member" // uses and changes its tenant's resources; makes member and reader keys
	RoleReader = "reader" // reads its tenant's resources (GET routes but the terminals); changes nothing
)

// CreateKeyRequest is the body of POST /v1/keys.
type CreateKeyRequest struct {
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
}

// Key is an API key's metadata. Secret is set only in the answer that
// creates the key: it is stored hashed and never shown again.
type Key struct {
	ID         string     `json:"id"`
	TenantID   string     `json:"tenant_id"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	Prefix     string     `json:"prefix"`
	Secret     string     `json:"secret,omitempty"`
	CreatedBy  string     `json:"created_by,omitempty"` // the key that created it; empty for the first admin key and keys from before hutch recorded it
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// KeyList is the answer of GET /v1/keys.
type KeyList struct {
	Keys []Key `json:"keys"`
}
