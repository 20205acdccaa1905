package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/ids"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/tenancy"
)

func testKeys(t *testing.T, s store.Store) {
	a, member := newTenant(t, s, "a")

	k := newKey(a.ID, "ci", api.RoleMember)
	k.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, 999999999, time.FixedZone("X", -7*3600))
	if err := s.CreateKey(member, k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	want := k
	want.CreatedAt = store.Time(k.CreatedAt)

	got, err := s.ListKeys(member)
	if err != nil {
		t.Fatalf("ListKeys: %v", err)
	}
	if diff := cmp.Diff([]store.Key{want}, got); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	// LookupKey is not scoped: auth calls it before it knows the tenant.
	lk, err := s.LookupKey(context.Background(), k.ID)
	if err != nil {
		t.Fatalf("LookupKey: %v", err)
	}
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
	if err := s.CreateKey(as(a.ID, api.RoleAdmin), newKey(a.ID, "adm", api.RoleAdmin)); err != nil {
		t.Errorf("admin creates an admin key: %v", err)
	}
	wantErr(t, "key of a missing tenant", s.CreateKey(system(), newKey(ids.New(), "x", api.RoleMember)), errdefs.ErrNotFound, "tenant_not_found")
	noTenant := newKey("", "implicit", api.RoleMember)
	if err := s.CreateKey(member, noTenant); err != nil {
		t.Errorf("CreateKey without TenantID: %v", err)
	} else if lk, err := s.LookupKey(member, noTenant.ID); err != nil || lk.TenantID != a.ID {
		t.Errorf("key created without TenantID: %+v, %v; want tenant %s", lk, err, a.ID)
	}

	// Deleting the key in use is allowed.
	self := tenancy.With(context.Background(), tenancy.Principal{TenantID: a.ID, KeyID: k.ID, Role: api.RoleMember})
	if err := s.DeleteKey(self, k.ID); err != nil {
		t.Fatalf("DeleteKey of the key in use: %v", err)
	}
	_, err = s.LookupKey(context.Background(), k.ID)
	wantErr(t, "LookupKey after delete", err, errdefs.ErrNotFound, "key_not_found")
	wantErr(t, "second delete", s.DeleteKey(member, k.ID), errdefs.ErrNotFound, "key_not_found")
	ks, err := s.ListKeys(member)
	if err != nil || len(ks) != 2 {
		t.Errorf("ListKeys after delete: %d keys, %v; want 2", len(ks), err)
	}
}

func testKeyIsolation(t *testing.T, s store.Store) {
	a, ctxA := newTenant(t, s, "a")
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
	wantErr(t, "B deletes A's key", s.DeleteKey(ctxB, k.ID), errdefs.ErrNotFound, "key_not_found")
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
	if err != nil || len(ks) != 1 {
		t.Errorf("A lists %d keys, %v; want 1", len(ks), err)
	}

	bg := context.Background()
	wantErr(t, "CreateKey without principal", s.CreateKey(bg, newKey(a.ID, "x", api.RoleMember)), errdefs.ErrForbidden, "no_tenant")
	_, err = s.ListKeys(bg)
	wantErr(t, "ListKeys without principal", err, errdefs.ErrForbidden, "no_tenant")
	wantErr(t, "DeleteKey without principal", s.DeleteKey(bg, k.ID), errdefs.ErrForbidden, "no_tenant")
	wantErr(t, "TouchKey without principal", s.TouchKey(bg, k.ID, time.Now()), errdefs.ErrForbidden, "no_tenant")
}
