package api

import "time"

// Key roles.
const (
	RoleAdmin  = "admin"  // may create tenants
	RoleMember = "member" // may use its tenant's resources
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
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// KeyList is the answer of GET /v1/keys.
type KeyList struct {
	Keys []Key `json:"keys"`
}

// CreateTenantRequest is the body of POST /v1/tenants (admin only).
type CreateTenantRequest struct {
	Name string `json:"name"`
}

// Tenant is a tenant; Key is its first key, returned once on creation.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Key       *Key      `json:"key,omitempty"`
}
