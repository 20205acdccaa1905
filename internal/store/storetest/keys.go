package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// keyCtx stores a key of role in tenantID, as the system, and returns it
// with a context acting as it.
func keyCtx(t *testing.T, s store.Store, tenantID, role string) (store.Key, context.Context) {
	t.Helper()
	k := newKey(tenantID, role, role)
	if err := s.CreateKey(system(), k); err != nil {
		t.Fatalf("CreateKey(%s) as the system: %v", role, err)
	}
	k, err := s.LookupKey(system(), k.ID)
	if err != nil {
		t.Fatal(err)
	}
	return k, actingAs(k)
}

// mintKey creates a key of role in tenantID with ctx and returns it, as
// stored, with a context acting as it.
func mintKey(t *testing.T, s store.Store, ctx context.Context, tenantID, role string) (store.Key, context.Context) {
	t.Helper()
	k := newKey(tenantID, "k", role)
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatalf("CreateKey(%s): %v", role, err)
	}
	k, err := s.LookupKey(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	return k, actingAs(k)
}

// actingAs returns a context acting as key k.
func actingAs(k store.Key) context.Context {
	return tenancy.With(context.Background(), tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role})
}

func testKeys(t *testing.T, s store.Store) {
	a, _ := newTenant(t, s, "a")
	mk, member := keyCtx(t, s, a.ID, api.RoleMember)

	k := newKey(a.ID, "ci", api.RoleMember)
	k.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, 999999999, time.FixedZone("X", -7*3600))
	if err := s.CreateKey(member, k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	want := k
	want.CreatedAt = store.Time(k.CreatedAt)
	want.CreatedBy = mk.ID // the caller's key

	got, err := s.ListKeys(member)
	if err != nil {
		t.Fatalf("ListKeys: %v", err)
	}
	listed := mk
	listed.TenantState = "" // only LookupKey reads it
	if diff := cmp.Diff([]store.Key{want, listed}, got); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	// LookupKey is not scoped: auth calls it before it knows the tenant,
	// and its tenant's state.
	lk, err := s.LookupKey(context.Background(), k.ID)
	if err != nil {
		t.Fatalf("LookupKey: %v", err)
	}
	want.TenantState = api.TenantActive
	if diff := cmp.Diff(want, lk); diff != "" {
		t.Errorf("LookupKey (-want +got):\n%s", diff)
	}
	_, err = s.LookupKey(context.Background(), "nosuchkey000")
	wantErr(t, "LookupKey of an unknown id", err, errdefs.ErrNotFound, "key_not_found")

	at := time.Date(2025, 6, 1, 12, 0, 0, 1500, time.Local)
	if err := s.TouchKey(member, k.ID, at); err != nil {
		t.Fatalf("TouchKey: %v", err)
	}
	lk, err = s.LookupKey(context.Background(), k.ID)
	if err != nil {
		t.Fatalf("LookupKey: %v", err)
	}
	if lk.LastUsedAt == nil || !lk.LastUsedAt.Equal(store.Time(at)) || lk.LastUsedAt.Location() != time.UTC {
		t.Errorf("LastUsedAt = %v, want %v in UTC", lk.LastUsedAt, store.Time(at))
	}
	wantErr(t, "TouchKey of an unknown id", s.TouchKey(member, "nosuchkey000", at), errdefs.ErrNotFound, "key_not_found")

	wantErr(t, "duplicate key id", s.CreateKey(member, k), errdefs.ErrConflict, "key_exists")
	bad := newKey(a.ID, "bad", "root")
	wantErr(t, "unknown role", s.CreateKey(member, bad), errdefs.ErrInvalid, "invalid_role")
	wantErr(t, "member creates an admin key", s.CreateKey(member, newKey(a.ID, "adm", api.RoleAdmin)), errdefs.ErrForbidden, "admin_required")
	if _, admin := keyCtx(t, s, a.ID, api.RoleAdmin); s.CreateKey(admin, newKey(a.ID, "adm", api.RoleAdmin)) != nil {
		t.Errorf("admin creates an admin key: %v", s.CreateKey(admin, newKey(a.ID, "adm", api.RoleAdmin)))
	}
	wantErr(t, "key of a missing tenant", s.CreateKey(system(), newKey(ids.New(), "x", api.RoleMember)), errdefs.ErrNotFound, "tenant_not_found")
	noTenant := newKey("", "implicit", api.RoleMember)
	if err := s.CreateKey(member, noTenant); err != nil {
		t.Errorf("CreateKey without TenantID: %v", err)
	} else if lk, err := s.LookupKey(member, noTenant.ID); err != nil || lk.TenantID != a.ID {
		t.Errorf("key created without TenantID: %+v, %v; want tenant %s", lk, err, a.ID)
	}

	// Deleting the key in use is allowed.
	if ids, err := s.DeleteKey(actingAs(k), k.ID, false); err != nil || len(ids) != 1 || ids[0] != k.ID {
		t.Fatalf("DeleteKey of the key in use: %v, %v; want [%s]", ids, err, k.ID)
	}
	_, err = s.LookupKey(context.Background(), k.ID)
	wantErr(t, "LookupKey after delete", err, errdefs.ErrNotFound, "key_not_found")
	_, err = s.DeleteKey(member, k.ID, false)
	wantErr(t, "second delete", err, errdefs.ErrNotFound, "key_not_found")
	ks, err := s.ListKeys(member)
	if err != nil || len(ks) != 4 {
		t.Errorf("ListKeys after delete: %d keys, %v; want 4", len(ks), err)
	}
	// A revoked key creates nothing, even with a request begun before.
	wantErr(t, "a revoked key creates a key", s.CreateKey(actingAs(k), newKey(a.ID, "late", api.RoleMember)),
		errdefs.ErrUnauthorized, "invalid_api_key")

	t.Run("Roles", func(t *testing.T) { testKeyRoles(t, s) })
	t.Run("Cascade", func(t *testing.T) { testKeyCascade(t, s) })
}

// testKeyRoles: a key creates and deletes only keys of its own role or
// below, a reader none; each key records its creator; the last admin key
// stays.
func testKeyRoles(t *testing.T, s store.Store) {
	a, _ := newTenant(t, s, "roles")
	admin, asAdmin := keyCtx(t, s, a.ID, api.RoleAdmin)
	_, asMember := keyCtx(t, s, a.ID, api.RoleMember)
	reader, asReader := keyCtx(t, s, a.ID, api.RoleReader)

	for _, tt := range []struct {
		name      string
		ctx       context.Context
		role      string
		wantClass error
		wantCode  string
	}{
		{"admin makes an admin", asAdmin, api.RoleAdmin, nil, ""},
		{"admin makes a reader", asAdmin, api.RoleReader, nil, ""},
		{"member makes a member", asMember, api.RoleMember, nil, ""},
		{"member makes a reader", asMember, api.RoleReader, nil, ""},
		{"member makes an admin", asMember, api.RoleAdmin, errdefs.ErrForbidden, "admin_required"},
		{"reader makes a reader", asReader, api.RoleReader, errdefs.ErrForbidden, "member_required"},
		{"reader makes a member", asReader, api.RoleMember, errdefs.ErrForbidden, "member_required"},
		{"system makes an admin", system(), api.RoleAdmin, nil, ""},
	} {
		k := newKey(a.ID, tt.name, tt.role)
		err := s.CreateKey(tt.ctx, k)
		if tt.wantClass != nil {
			wantErr(t, tt.name, err, tt.wantClass, tt.wantCode)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got, err := s.LookupKey(context.Background(), k.ID)
		p, _ := tenancy.From(tt.ctx)
		if err != nil || got.CreatedBy != p.KeyID {
			t.Errorf("%s: CreatedBy %q, %v; want %q", tt.name, got.CreatedBy, err, p.KeyID)
		}
	}
	forged := newKey(a.ID, "forged", api.RoleMember)
	forged.CreatedBy = admin.ID
	wantErr(t, "a key recorded as another's", s.CreateKey(asMember, forged), errdefs.ErrForbidden, "wrong_creator")

	_, err := s.DeleteKey(asMember, admin.ID, false)
	wantErr(t, "member deletes an admin key", err, errdefs.ErrForbidden, "admin_required")
	_, err = s.DeleteKey(asReader, reader.ID, false)
	wantErr(t, "reader deletes itself", err, errdefs.ErrForbidden, "member_required")
	if _, err := s.LookupKey(context.Background(), admin.ID); err != nil {
		t.Fatalf("the admin key after refused deletes: %v", err)
	}

	// Only the last admin key anywhere is kept: every other one can go.
	var admins []string
	ks, err := s.ListKeys(system())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if k.Role == api.RoleAdmin {
			admins = append(admins, k.ID)
		}
	}
	if len(admins) < 2 {
		t.Fatalf("%d admin keys, want at least 2", len(admins))
	}
	for _, id := range admins[1:] {
		if _, err := s.DeleteKey(system(), id, false); err != nil {
			t.Fatalf("delete an admin key while others remain: %v", err)
		}
	}
	_, err = s.DeleteKey(system(), admins[0], false)
	wantErr(t, "the last admin key", err, errdefs.ErrConflict, "last_admin_key")
	if _, err := s.LookupKey(context.Background(), admins[0]); err != nil {
		t.Errorf("the last admin key after its refused delete: %v", err)
	}
}

// testKeyCascade: a cascading delete takes every key the key made,
// transitively, also below a key deleted before, and nothing else; an
// admin's reaches the first keys of the tenants it made; refused in part,
// it deletes nothing.
func testKeyCascade(t *testing.T, s store.Store) {
	a, _ := newTenant(t, s, "cascade")
	_, asAdmin := keyCtx(t, s, a.ID, api.RoleAdmin) // the last admin key stays
	root, asRoot := keyCtx(t, s, a.ID, api.RoleMember)
	sibling, _ := keyCtx(t, s, a.ID, api.RoleMember)
	child, asChild := mintKey(t, s, asRoot, a.ID, api.RoleMember)
	grandchild, _ := mintKey(t, s, asChild, a.ID, api.RoleReader)
	hidden, asHidden := mintKey(t, s, asChild, a.ID, api.RoleMember)
	deep, _ := mintKey(t, s, asHidden, a.ID, api.RoleMember)
	if ids, err := s.DeleteKey(asRoot, child.ID, false); err != nil || len(ids) != 1 {
		t.Fatalf("delete the middle key: %v, %v", ids, err)
	}
	gone, err := s.DeleteKey(asRoot, root.ID, true)
	if err != nil {
		t.Fatalf("cascade: %v", err)
	}
	if diff := cmp.Diff([]string{root.ID, grandchild.ID, hidden.ID, deep.ID}, gone,
		cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("cascade deleted (-want +got):\n%s", diff)
	}
	if len(gone) == 0 || gone[0] != root.ID {
		t.Errorf("cascade deleted %v: the key itself first", gone)
	}
	for _, id := range gone {
		if _, err := s.LookupKey(context.Background(), id); err == nil {
			t.Errorf("key %s survived the cascade", id)
		}
	}
	if _, err := s.LookupKey(context.Background(), sibling.ID); err != nil {
		t.Errorf("a key outside the cascade: %v", err)
	}

	// Refused in part: a member's cascade that meets an admin key below it
	// (made by the system, recorded under the member) deletes nothing.
	m, asM := keyCtx(t, s, a.ID, api.RoleMember)
	under := newKey(a.ID, "admin below", api.RoleAdmin)
	under.CreatedBy = m.ID
	if err := s.CreateKey(system(), under); err != nil {
		t.Fatal(err)
	}
	mine, _ := mintKey(t, s, asM, a.ID, api.RoleReader)
	_, err = s.DeleteKey(asM, m.ID, true)
	wantErr(t, "cascade over an admin key", err, errdefs.ErrForbidden, "admin_required")
	for _, id := range []string{m.ID, under.ID, mine.ID} {
		if _, err := s.LookupKey(context.Background(), id); err != nil {
			t.Errorf("key %s went in a refused cascade: %v", id, err)
		}
	}

	// An admin's cascade reaches the tenants it made.
	adm, _ := mintKey(t, s, asAdmin, a.ID, api.RoleAdmin)
	b := store.Tenant{ID: ids.New(), Name: "made-" + a.Name}
	first := newKey(b.ID, "default", api.RoleMember)
	if err := s.CreateTenant(actingAs(adm), b, first); err != nil {
		t.Fatalf("admin creates a tenant: %v", err)
	}
	first.Role = api.RoleMember
	second, _ := mintKey(t, s, actingAs(first), b.ID, api.RoleMember)
	if got, err := s.DeleteKey(asAdmin, adm.ID, true); err != nil || len(got) != 3 {
		t.Errorf("admin cascade: %v, %v; want the admin key, %s and %s", got, err, first.ID, second.ID)
	}
	for _, id := range []string{first.ID, second.ID} {
		if _, err := s.LookupKey(context.Background(), id); err == nil {
			t.Errorf("key %s of a tenant the revoked admin key made survived", id)
		}
	}
}

func testKeyIsolation(t *testing.T, s store.Store) {
	a, _ := newTenant(t, s, "a")
	_, ctxA := keyCtx(t, s, a.ID, api.RoleMember)
	_, ctxB := newTenant(t, s, "b")
	k := newKey(a.ID, "a-key", api.RoleMember)
	if err := s.CreateKey(ctxA, k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}

	ks, err := s.ListKeys(ctxB)
	if err != nil {
		t.Fatalf("ListKeys as B: %v", err)
	}
	if len(ks) != 0 {
		t.Errorf("B lists %d keys %+v, want none", len(ks), ks)
	}
	_, err = s.DeleteKey(ctxB, k.ID, false)
	wantErr(t, "B deletes A's key", err, errdefs.ErrNotFound, "key_not_found")
	_, err = s.DeleteKey(ctxB, k.ID, true)
	wantErr(t, "B deletes A's key with cascade", err, errdefs.ErrNotFound, "key_not_found")
	wantErr(t, "B touches A's key", s.TouchKey(ctxB, k.ID, time.Now()), errdefs.ErrNotFound, "key_not_found")
	wantErr(t, "B creates a key in A", s.CreateKey(ctxB, newKey(a.ID, "x", api.RoleMember)), errdefs.ErrForbidden, "wrong_tenant")

	got, err := s.LookupKey(ctxA, k.ID)
	if err != nil {
		t.Fatalf("LookupKey: %v", err)
	}
	if got.LastUsedAt != nil {
		t.Errorf("A's key was touched by B: LastUsedAt = %v", got.LastUsedAt)
	}
	ks, err = s.ListKeys(ctxA)
	if err != nil || len(ks) != 2 {
		t.Errorf("A lists %d keys, %v; want 2", len(ks), err)
	}

	bg := context.Background()
	wantErr(t, "CreateKey without principal", s.CreateKey(bg, newKey(a.ID, "x", api.RoleMember)), errdefs.ErrForbidden, "no_tenant")
	_, err = s.ListKeys(bg)
	wantErr(t, "ListKeys without principal", err, errdefs.ErrForbidden, "no_tenant")
	_, err = s.DeleteKey(bg, k.ID, false)
	wantErr(t, "DeleteKey without principal", err, errdefs.ErrForbidden, "no_tenant")
	wantErr(t, "TouchKey without principal", s.TouchKey(bg, k.ID, time.Now()), errdefs.ErrForbidden, "no_tenant")
}
