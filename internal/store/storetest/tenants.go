package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

func testTenants(t *testing.T, s store.Store) {
	ctx := system()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	created := time.Date(2024, 2, 29, 23, 59, 58, 123456789, paris)
	a := store.Tenant{ID: ids.New(), Name: "acme", CreatedAt: created}
	if err := s.CreateTenant(ctx, a); err != nil {
		t.Fatalf("CreateTenant: %v", err)
	}
	got, err := s.GetTenant(ctx, a.ID)
	if err != nil {
		t.Fatalf("GetTenant: %v", err)
	}
	want := store.Tenant{ID: a.ID, Name: "acme", CreatedAt: store.Time(created), State: api.TenantActive}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetTenant (-want +got):\n%s", diff)
	}
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond() != 123456000 {
		t.Errorf("CreatedAt = %v, want UTC to the microsecond", got.CreatedAt)
	}

	wantErr(t, "duplicate id", s.CreateTenant(ctx, store.Tenant{ID: a.ID, Name: "other"}), errdefs.ErrConflict, "tenant_exists")
	wantErr(t, "duplicate name", s.CreateTenant(ctx, store.Tenant{ID: ids.New(), Name: "acme"}), errdefs.ErrConflict, "tenant_exists")
	wantErr(t, "no name", s.CreateTenant(ctx, store.Tenant{ID: ids.New()}), errdefs.ErrInvalid, "")
	wantErr(t, "born suspended", s.CreateTenant(ctx, store.Tenant{ID: ids.New(), Name: "z", State: api.TenantSuspended}), errdefs.ErrInvalid, "invalid_tenant")

	// A tenant and its first key are created together or not at all.
	b := store.Tenant{ID: ids.New(), Name: "bolt"}
	k := newKey(b.ID, "first", api.RoleMember)
	before := time.Now()
	if err := s.CreateTenant(ctx, b, k); err != nil {
		t.Fatalf("CreateTenant with a key: %v", err)
	}
	gotB, err := s.GetTenant(ctx, b.ID)
	if err != nil {
		t.Fatalf("GetTenant: %v", err)
	}
	if gotB.CreatedAt.Before(store.Time(before)) || gotB.CreatedAt.After(time.Now()) {
		t.Errorf("zero CreatedAt became %v, want about now", gotB.CreatedAt)
	}
	if _, err := s.LookupKey(ctx, k.ID); err != nil {
		t.Errorf("LookupKey of the first key: %v", err)
	}
	c := store.Tenant{ID: ids.New(), Name: "comet"}
	dup := newKey(c.ID, "dup", api.RoleMember)
	dup.ID = k.ID
	wantErr(t, "tenant with a duplicate key", s.CreateTenant(ctx, c, dup), errdefs.ErrConflict, "key_exists")
	_, err = s.GetTenant(ctx, c.ID)
	wantErr(t, "tenant whose key failed", err, errdefs.ErrNotFound, "tenant_not_found")
	wantErr(t, "key of another tenant", s.CreateTenant(ctx, c, newKey(a.ID, "x", api.RoleMember)), errdefs.ErrInvalid, "")

	ts, err := s.ListTenants(ctx)
	if err != nil {
		t.Fatalf("ListTenants: %v", err)
	}
	var names []string
	for _, tn := range ts {
		names = append(names, tn.Name)
	}
	if diff := cmp.Diff([]string{"acme", "bolt"}, names); diff != "" {
		t.Errorf("ListTenants names, oldest first (-want +got):\n%s", diff)
	}
}

func testTenantAccess(t *testing.T, s store.Store) {
	a, member := newTenant(t, s, "a")
	b, _ := newTenant(t, s, "b")
	admin := as(a.ID, api.RoleAdmin)

	wantErr(t, "member creates a tenant", s.CreateTenant(member, store.Tenant{ID: ids.New(), Name: "m"}), errdefs.ErrForbidden, "admin_required")
	if err := s.CreateTenant(admin, store.Tenant{ID: ids.New(), Name: "by-admin"}); err != nil {
		t.Errorf("admin creates a tenant: %v", err)
	}

	if got, err := s.GetTenant(member, a.ID); err != nil || got.ID != a.ID {
		t.Errorf("member gets own tenant: %+v, %v", got, err)
	}
	_, err := s.GetTenant(member, b.ID)
	wantErr(t, "member gets another tenant", err, errdefs.ErrNotFound, "tenant_not_found")
	if got, err := s.GetTenant(admin, b.ID); err != nil || got.ID != b.ID {
		t.Errorf("admin gets another tenant: %+v, %v", got, err)
	}
	_, err = s.GetTenant(admin, ids.New())
	wantErr(t, "admin gets a missing tenant", err, errdefs.ErrNotFound, "tenant_not_found")

	_, err = s.ListTenants(member)
	wantErr(t, "member lists tenants", err, errdefs.ErrForbidden, "admin_required")
	ts, err := s.ListTenants(admin)
	if err != nil {
		t.Fatalf("admin lists tenants: %v", err)
	}
	if !slices.ContainsFunc(ts, func(tn store.Tenant) bool { return tn.ID == b.ID }) || len(ts) != 3 {
		t.Errorf("admin lists %d tenants %+v, want 3 including %s", len(ts), ts, b.ID)
	}

	bg := context.Background()
	wantErr(t, "CreateTenant without principal", s.CreateTenant(bg, store.Tenant{ID: ids.New(), Name: "x"}), errdefs.ErrForbidden, "no_tenant")
	_, err = s.GetTenant(bg, a.ID)
	wantErr(t, "GetTenant without principal", err, errdefs.ErrForbidden, "no_tenant")
	_, err = s.ListTenants(bg)
	wantErr(t, "ListTenants without principal", err, errdefs.ErrForbidden, "no_tenant")
}

// testTenantQuotas: quotas round-trip with every field optional (nil: the
// server's default, 0: no limit); only admins and the system set them; a
// tenant's own keys read them.
func testTenantQuotas(t *testing.T, s store.Store) {
	a, member := newTenant(t, s, "a")
	admin := as(ids.New(), api.RoleAdmin)
	if got, err := s.GetTenant(member, a.ID); err != nil || got.Quotas != (api.Quotas{}) {
		t.Fatalf("a new tenant's quotas = %+v, %v; want none set", got.Quotas, err)
	}
	n, zero, cpu := 5, 0, 2.5
	q := api.Quotas{Sandboxes: &n, MemoryMB: &zero, CPU: &cpu}
	// Every other quota round-trips too, each its own value.
	for i, f := range store.QuotaCounts(&q) {
		if *f.Value == nil {
			v := 100 + i
			*f.Value = &v
		}
	}
	got, err := s.SetTenantQuotas(admin, a.ID, q)
	if err != nil {
		t.Fatalf("admin sets quotas: %v", err)
	}
	if diff := cmp.Diff(q, got.Quotas); diff != "" || got.ID != a.ID || got.Name != a.Name {
		t.Errorf("SetTenantQuotas answer %+v (-want +got quotas):\n%s", got, diff)
	}
	if got, err := s.GetTenant(member, a.ID); err != nil || !cmp.Equal(q, got.Quotas) {
		t.Errorf("member reads its quotas: %+v, %v; want %+v", got.Quotas, err, q)
	}
	ts, err := s.ListTenants(system())
	if err != nil || len(ts) != 1 || !cmp.Equal(q, ts[0].Quotas) {
		t.Errorf("ListTenants = %+v, %v; want the quotas", ts, err)
	}

	_, err = s.SetTenantQuotas(member, a.ID, api.Quotas{Sandboxes: &zero})
	wantErr(t, "member sets its quotas", err, errdefs.ErrForbidden, "admin_required")
	_, err = s.SetTenantQuotas(as(a.ID, api.RoleReader), a.ID, api.Quotas{})
	wantErr(t, "reader sets its quotas", err, errdefs.ErrForbidden, "admin_required")
	_, err = s.SetTenantQuotas(context.Background(), a.ID, api.Quotas{})
	wantErr(t, "no principal", err, errdefs.ErrForbidden, "no_tenant")
	_, err = s.SetTenantQuotas(admin, ids.New(), api.Quotas{})
	wantErr(t, "a missing tenant", err, errdefs.ErrNotFound, "tenant_not_found")
	neg, negCPU := -1, -0.5
	for name, bad := range map[string]api.Quotas{"sandboxes": {Sandboxes: &neg}, "pids": {Pids: &neg}, "disk": {DiskMB: &neg},
		"snapshots": {Snapshots: &neg}, "streams": {Streams: &neg}, "cpu": {CPU: &negCPU}} {
		_, err = s.SetTenantQuotas(admin, a.ID, bad)
		wantErr(t, "negative "+name, err, errdefs.ErrInvalid, "invalid_quota")
	}
	if got, _ := s.GetTenant(system(), a.ID); !cmp.Equal(q, got.Quotas) {
		t.Errorf("refused changes changed the quotas to %+v", got.Quotas)
	}

	// Back to the defaults; and a tenant made with quotas keeps them.
	if got, err := s.SetTenantQuotas(system(), a.ID, api.Quotas{}); err != nil || got.Quotas != (api.Quotas{}) {
		t.Errorf("system resets quotas: %+v, %v", got.Quotas, err)
	}
	b := store.Tenant{ID: ids.New(), Name: "b-" + ids.Token(4), Quotas: api.Quotas{Pids: &n}}
	if err := s.CreateTenant(system(), b); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetTenant(system(), b.ID); err != nil || !cmp.Equal(b.Quotas, got.Quotas) {
		t.Errorf("a tenant made with quotas: %+v, %v", got.Quotas, err)
	}
	wantErr(t, "a tenant made with a negative quota", s.CreateTenant(system(), store.Tenant{ID: ids.New(), Name: "c", Quotas: api.Quotas{MemoryMB: &neg}}), errdefs.ErrInvalid, "invalid_quota")
}
