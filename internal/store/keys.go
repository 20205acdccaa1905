package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
)

// Keys keeps the API keys, each in its tenant.
type Keys interface {
	// CreateKey stores a key in the caller's tenant (k.TenantID must be it,
	// unless ctx is the system's), made by the caller's key (k.CreatedBy:
	// set to it when empty, refused when another). A key creates only keys
	// of its own role or below, and a reader none (tenancy.RoleRequired);
	// the system any. A key revoked before the write commits creates
	// nothing (key_not_found). CreateTenant's keys follow the same rules.
	CreateKey(ctx context.Context, k Key) error
	// ListKeys returns the caller's tenant's keys, oldest first.
	ListKeys(ctx context.Context) ([]Key, error)
	// DeleteKey deletes one of the caller's tenant's keys, the key the
	// caller is using included, and, with cascade, every key it created,
	// transitively, even through keys deleted before (an admin's reaches
	// the first keys of the tenants it created, and theirs). It returns
	// the ids deleted, id first. A key deletes only keys of its own role or
	// below, and a reader none (tenancy.RoleRequired); the system any. A
	// delete that would leave no admin key anywhere is refused
	// (LastAdminKey), and so is all of it when any part is refused.
	DeleteKey(ctx context.Context, id string, cascade bool) ([]string, error)
	// LookupKey returns any tenant's key by id, with its tenant's state
	// (Key.TenantState). It is not scoped: auth calls it to learn the
	// tenant. Nothing else should.
	LookupKey(ctx context.Context, id string) (Key, error)
	// TouchKey sets a key's LastUsedAt.
	TouchKey(ctx context.Context, id string, at time.Time) error
	// DeleteKeysByTenant deletes every key of tenantID and returns their
	// ids. System only: a tenant's deletion, which revokes its keys first.
	DeleteKeysByTenant(ctx context.Context, tenantID string) ([]string, error)
}

// Key is an API key. Only a hash of its secret is kept.
type Key struct {
	ID         string
	TenantID   string
	Name       string
	Role       string // api.RoleAdmin, api.RoleMember or api.RoleReader
	Prefix     string // the public part of the key, safe to show
	Hash       []byte
	CreatedBy  string // the ID of the key that created it; "" when the system did
	CreatedAt  time.Time
	LastUsedAt *time.Time
	// TenantState is its tenant's state, read with it by LookupKey;
	// other reads leave it empty.
	TenantState api.TenantState
}
