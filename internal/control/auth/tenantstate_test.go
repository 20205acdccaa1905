package auth

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestTenantState: a key of a suspended tenant is a principal marked
// suspended, which may read and nothing else; one of a tenant being
// deleted is refused like an unknown key, through Begin and BeginKey.
func TestTenantState(t *testing.T) {
	st := openStore(t)
	a := &Authenticator{Store: st}
	k, full := newTenantKey(t, st, api.RoleMember)
	sys := tenancy.System(context.Background())
	set := func(s api.TenantState) {
		t.Helper()
		if _, err := st.UpdateTenant(sys, k.TenantID, func(t *store.Tenant) error { t.State = s; return nil }); err != nil {
			t.Fatal(err)
		}
		a.TenantChanged(k.TenantID) // as internal/control/tenants does
	}
	p, err := authenticate(a, context.Background(), "Bearer "+full)
	if err != nil || p.Suspended || p.May(api.RoleMember) != nil {
		t.Fatalf("an active tenant's key: %+v, %v", p, err)
	}
	set(api.TenantSuspended)
	p, err = authenticate(a, context.Background(), "Bearer "+full)
	if err != nil || !p.Suspended {
		t.Fatalf("a suspended tenant's key: %+v, %v; want a principal marked suspended", p, err)
	}
	if err := p.May(api.RoleReader); err != nil {
		t.Errorf("a suspended tenant's key reads: %v", err)
	}
	wantErr(t, "a suspended tenant's key changes", p.May(api.RoleMember), errdefs.ErrForbidden, "tenant_suspended")
	wantErr(t, "a suspended tenant's key asks for an admin's", p.May(api.RoleAdmin), errdefs.ErrForbidden, "admin_required")
	for _, s := range []api.TenantState{api.TenantDeleting, api.TenantDeleted} {
		set(s)
		_, err = authenticate(a, context.Background(), "Bearer "+full)
		wantErr(t, "Begin with a key of a "+string(s)+" tenant", err, errdefs.ErrUnauthorized, "invalid_api_key")
		_, _, err = a.BeginKey(context.Background(), k.ID)
		wantErr(t, "BeginKey with a key of a "+string(s)+" tenant", err, errdefs.ErrUnauthorized, "invalid_api_key")
	}
}

// TestRevokeTenant: a tenant's keys all go, the requests they
// authenticated end with ErrKeyRevoked, and another tenant's stay; only
// the system revokes a tenant's keys.
func TestRevokeTenant(t *testing.T) {
	st := openStore(t)
	a := &Authenticator{Store: st}
	k, full := newTenantKey(t, st, api.RoleMember)
	sys := tenancy.System(context.Background())
	second, _ := NewKey(k.TenantID, "second", api.RoleReader)
	if err := st.CreateKey(sys, second); err != nil {
		t.Fatal(err)
	}
	_, otherFull := newTenantKey(t, st, api.RoleMember)
	ctx, other := begun(t, a, full), begun(t, a, otherFull)

	_, err := a.RevokeTenant(ctx, k.TenantID)
	wantErr(t, "a tenant's key revokes its tenant", err, errdefs.ErrForbidden, "system_only")
	ids, err := a.RevokeTenant(sys, k.TenantID)
	if err != nil || len(ids) != 2 {
		t.Fatalf("RevokeTenant = %v, %v; want both keys", ids, err)
	}
	select {
	case <-ctx.Done():
		if context.Cause(ctx) != ErrKeyRevoked {
			t.Errorf("the request ended with %v", context.Cause(ctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a revoked tenant's request goes on")
	}
	if other.Err() != nil {
		t.Error("another tenant's request ended")
	}
	_, err = authenticate(a, context.Background(), "Bearer "+full)
	wantErr(t, "a revoked tenant's key", err, errdefs.ErrUnauthorized, "invalid_api_key")
}
