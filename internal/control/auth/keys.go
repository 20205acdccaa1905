package auth

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/store"
)

// The keys of the caller's tenant, for the API: made and listed here,
// revoked by Revoke.

// CreateKey mints a key named name of role in the caller's tenant,
// recorded as made by the caller's key, and returns it with its secret,
// which is shown this once. The store refuses a key more powerful than
// the caller's (403 <role>_required), and one past its tenant's quota of
// keys (429 quota_exceeded).
func (a *Authenticator) CreateKey(ctx context.Context, name, role string) (api.Key, error) {
	p, _ := tenancy.From(ctx)
	k, secret := NewKey(p.TenantID, name, role)
	k.CreatedBy = p.KeyID
	claim, err := a.Quotas.Admit(ctx, p.TenantID, quota.Ask{Keys: 1}, nil)
	if err != nil {
		return api.Key{}, err
	}
	defer claim.Cancel()
	if err := claim.Commit(ctx, nil, func() error { return a.Store.CreateKey(ctx, k) }); err != nil {
		return api.Key{}, err
	}
	out := KeyToAPI(k)
	out.Secret = secret
	return out, nil
}

// ListKeys returns the caller's tenant's keys, oldest first, without
// their secrets.
func (a *Authenticator) ListKeys(ctx context.Context) (api.KeyList, error) {
	keys, err := a.Store.ListKeys(ctx)
	if err != nil {
		return api.KeyList{}, err
	}
	out := api.KeyList{Keys: make([]api.Key, 0, len(keys))}
	for _, k := range keys {
		out.Keys = append(out.Keys, KeyToAPI(k))
	}
	return out, nil
}

// KeyToAPI is k as the API shows it; only a hash of its secret is kept,
// and that is not shown. A new tenant's first key is shown with it.
func KeyToAPI(k store.Key) api.Key {
	return api.Key{
		ID:         k.ID,
		TenantID:   k.TenantID,
		Name:       k.Name,
		Role:       k.Role,
		Prefix:     k.Prefix,
		CreatedBy:  k.CreatedBy,
		CreatedAt:  k.CreatedAt,
		LastUsedAt: k.LastUsedAt,
	}
}
