package auth

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// MaxTenantName is the longest tenant name, in characters.
const MaxTenantName = 128

// CreateTenant creates a tenant named name with its first key, a member key
// named "default" and made by the caller's key, in one transaction. It
// returns the key's secret, to be shown once. ctx must be an admin's or
// the system's (the store checks).
func CreateTenant(ctx context.Context, st store.Tenants, name string) (store.Tenant, store.Key, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxTenantName || strings.ContainsFunc(name, isControl) {
		return store.Tenant{}, store.Key{}, "", errdefs.Invalid("invalid_tenant_name",
			"a tenant name must have 1 to %d characters and no control characters", MaxTenantName)
	}
	t := store.Tenant{ID: ids.New(), Name: name, CreatedAt: store.Time(time.Now()), State: api.TenantActive}
	k, secret := NewKey(t.ID, "default", api.RoleMember)
	if p, ok := tenancy.From(ctx); ok {
		k.CreatedBy = p.KeyID
	}
	if err := st.CreateTenant(ctx, t, k); err != nil {
		return store.Tenant{}, store.Key{}, "", err
	}
	return t, k, secret, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
