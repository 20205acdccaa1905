package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// racingKeys runs a hook inside LookupKey, after the key was read.
type racingKeys struct {
	store.Store
	mu    sync.Mutex
	after func()
}

func (r *racingKeys) LookupKey(ctx context.Context, id string) (store.Key, error) {
	k, err := r.Store.LookupKey(ctx, id)
	r.mu.Lock()
	fn := r.after
	r.after = nil
	r.mu.Unlock()
	if fn != nil {
		fn()
	}
	return k, err
}

// TestKeyRevokedWhileLookedUp: a revocation that overtakes a lookup of
// its key leaves nothing kept; the next request is refused.
func TestKeyRevokedWhileLookedUp(t *testing.T) {
	st := &racingKeys{Store: openStore(t)}
	a := &Authenticator{Store: st}
	ctx := context.Background()
	k, full := newTenantKey(t, st, api.RoleMember)
	owner := tenancy.With(ctx, tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role})
	st.after = func() {
		if _, err := a.Revoke(owner, k.ID, false); err != nil {
			t.Error(err)
		}
	}
	// The request the revocation overtook is ended with its key.
	rctx, end, err := a.Begin(ctx, "Bearer "+full)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	if context.Cause(rctx) != ErrKeyRevoked {
		t.Errorf("the request in flight: cause %v; want ErrKeyRevoked", context.Cause(rctx))
	}
	_, err = authenticate(a, ctx, "Bearer "+full)
	wantErr(t, "the next request", err, errdefs.ErrUnauthorized, "invalid_api_key")
}

// TestKeyTenantChanged: a tenant's suspension is seen by the next request
// of a key kept in memory once the Authenticator is told.
func TestKeyTenantChanged(t *testing.T) {
	st := openStore(t)
	a := &Authenticator{Store: st}
	k, full := newTenantKey(t, st, api.RoleMember)
	if p, err := authenticate(a, context.Background(), "Bearer "+full); err != nil || p.Suspended {
		t.Fatalf("before: %+v, %v", p, err)
	}
	if _, err := st.UpdateTenant(tenancy.System(context.Background()), k.TenantID, func(t *store.Tenant) error {
		t.State = api.TenantSuspended
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a.TenantChanged(k.TenantID)
	if p, err := authenticate(a, context.Background(), "Bearer "+full); err != nil || !p.Suspended {
		t.Fatalf("after the suspension: %+v, %v; want suspended", p, err)
	}
}

// TestKeyExpires: a key deleted by another control plane on the same
// store is refused once the one kept has expired.
func TestKeyExpires(t *testing.T) {
	st := openStore(t)
	now := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	a := &Authenticator{Store: st, now: func() time.Time { return now }}
	ctx := context.Background()
	k, full := newTenantKey(t, st, api.RoleAdmin)
	if _, err := authenticate(a, ctx, "Bearer "+full); err != nil {
		t.Fatal(err)
	}
	newTenantKey(t, st, api.RoleAdmin) // the last admin key cannot go
	owner := tenancy.With(ctx, tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role})
	if _, err := st.DeleteKey(owner, k.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := authenticate(a, ctx, "Bearer "+full); err != nil {
		t.Fatalf("while kept: %v; want the key kept in memory", err)
	}
	now = now.Add(keyTTL)
	_, err := authenticate(a, ctx, "Bearer "+full)
	wantErr(t, "once expired", err, errdefs.ErrUnauthorized, "invalid_api_key")
}
