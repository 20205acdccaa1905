package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

func TestCreateTenant(t *testing.T) {
	st := openStore(t)
	admin, _ := newTenantKey(t, st, api.RoleAdmin)
	ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: admin.TenantID, KeyID: admin.ID, Role: api.RoleAdmin})

	tn, k, secret, err := CreateTenant(ctx, st, "  acme  ")
	if err != nil {
		t.Fatalf("CreateTenant: %v", err)
	}
	if tn.Name != "acme" || k.TenantID != tn.ID || k.Role != api.RoleMember || tn.CreatedAt.IsZero() {
		t.Errorf("tenant %+v, key %+v", tn, k)
	}
	p, err := authenticate(&Authenticator{Store: st}, context.Background(), "Bearer "+secret)
	if err != nil {
		t.Fatalf("the new tenant's key does not authenticate: %v", err)
	}
	if p.TenantID != tn.ID || p.Role != api.RoleMember {
		t.Errorf("principal %+v, want a member of %s", p, tn.ID)
	}
	got, err := st.GetTenant(tenancy.With(context.Background(), p), tn.ID)
	if err != nil || got != tn {
		t.Errorf("GetTenant = %+v, %v; want %+v", got, err, tn)
	}

	_, _, _, err = CreateTenant(ctx, st, "acme")
	wantErr(t, "duplicate name", err, errdefs.ErrConflict, "tenant_exists")
	_, _, _, err = CreateTenant(tenancy.With(context.Background(), p), st, "by-member")
	wantErr(t, "member creates a tenant", err, errdefs.ErrForbidden, "admin_required")
	for _, name := range []string{"", "   ", strings.Repeat("x", MaxTenantName+1), "a\nb"} {
		_, _, _, err := CreateTenant(ctx, st, name)
		wantErr(t, "name "+name, err, errdefs.ErrInvalid, "invalid_tenant_name")
	}
	if _, _, _, err := CreateTenant(ctx, st, strings.Repeat("é", MaxTenantName)); err != nil {
		t.Errorf("a name of %d characters: %v", MaxTenantName, err)
	}
}
