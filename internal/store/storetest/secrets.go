package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

// testSecrets covers the secret methods: round trip, conflicts, updates,
// deletion, names, kinds, tenant isolation and the system-only key count.
func testSecrets(t *testing.T, s store.Store) {
	for _, tt := range []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"RoundTrip", testSecretRoundTrip},
		{"Conflict", testSecretConflict},
		{"Update", testSecretUpdate},
		{"Delete", testSecretDelete},
		{"Names", testSecretNames},
		{"Kinds", testSecretKinds},
		{"Isolation", testSecretIsolation},
		{"NoPrincipal", testSecretNoPrincipal},
		{"KeyIDs", testSecretKeyIDs},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, s) })
	}
}

// newSecret returns a secret record named name with a stand-in sealed
// value: the store treats it as opaque bytes.
func newSecret(name string) *store.Secret {
	return &store.Secret{
		Name: name, Description: "for " + name, ValueBytes: 5, KeyID: "k1",
		Nonce: []byte("twelve bytes"), Ciphertext: []byte("sealed-" + name),
	}
}

func testSecretRoundTrip(t *testing.T, s store.Store) {
	a, ctx := newTenant(t, s, "a")
	sec := newSecret("OPENAI_API_KEY")
	sec.TenantID = "someone-else" // replaced by the caller's tenant
	sec.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, 999999999, time.FixedZone("X", 3600))
	if err := s.CreateSecret(ctx, sec); err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	if sec.TenantID != a.ID || !ids.Valid(sec.ID) {
		t.Errorf("created secret has tenant %q id %q; want %q and a ULID", sec.TenantID, sec.ID, a.ID)
	}
	if !sec.CreatedAt.Equal(store.Time(sec.CreatedAt)) || sec.CreatedAt.Location() != time.UTC || sec.UpdatedAt.IsZero() {
		t.Errorf("times not normalised: created %v updated %v", sec.CreatedAt, sec.UpdatedAt)
	}
	got, err := s.GetSecret(ctx, sec.Name)
	if err != nil {
		t.Fatalf("GetSecret: %v", err)
	}
	if diff := cmp.Diff(sec, got); diff != "" {
		t.Errorf("GetSecret (-want +got):\n%s", diff)
	}
	second := newSecret("ANTHROPIC_API_KEY")
	if err := s.CreateSecret(ctx, second); err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	list, err := s.ListSecrets(ctx)
	if err != nil {
		t.Fatalf("ListSecrets: %v", err)
	}
	if diff := cmp.Diff([]store.Secret{*second, *sec}, list); diff != "" {
		t.Errorf("ListSecrets, by name (-want +got):\n%s", diff)
	}
	_, err = s.GetSecret(ctx, "MISSING")
	wantErr(t, "GetSecret of a missing name", err, errdefs.ErrNotFound, "secret_not_found")

	// The system may create in a tenant it names.
	sys := newSecret("SYSTEM_MADE")
	sys.TenantID = a.ID
	if err := s.CreateSecret(system(), sys); err != nil {
		t.Fatalf("system CreateSecret: %v", err)
	}
	if _, err := s.GetSecret(ctx, "SYSTEM_MADE"); err != nil {
		t.Errorf("secret the system made in A: %v", err)
	}
	missing := newSecret("X")
	missing.TenantID = ids.New()
	wantErr(t, "secret of a missing tenant", s.CreateSecret(system(), missing), errdefs.ErrNotFound, "tenant_not_found")
}

func testSecretConflict(t *testing.T, s store.Store) {
	_, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	if err := s.CreateSecret(ctxA, newSecret("TOKEN")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "same name, same tenant", s.CreateSecret(ctxA, newSecret("TOKEN")), errdefs.ErrConflict, "secret_exists")
	if err := s.CreateSecret(ctxB, newSecret("TOKEN")); err != nil {
		t.Errorf("same name in another tenant: %v", err)
	}
	// Names are case-sensitive.
	if err := s.CreateSecret(ctxA, newSecret("token")); err != nil {
		t.Errorf("name differing in case: %v", err)
	}
	dup := newSecret("OTHER")
	if err := s.CreateSecret(ctxA, dup); err != nil {
		t.Fatal(err)
	}
	again := newSecret("OTHER2")
	again.ID = dup.ID
	if err := s.CreateSecret(ctxA, again); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("duplicate id: %v, want a conflict", err)
	}
}

func testSecretUpdate(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	sec := newSecret("DB_PASSWORD")
	sec.CreatedAt = time.Now().Add(-time.Hour)
	sec.UpdatedAt = sec.CreatedAt
	if err := s.CreateSecret(ctx, sec); err != nil {
		t.Fatal(err)
	}
	got, err := s.UpdateSecret(ctx, sec.Name, func(x *store.Secret) error {
		x.ID, x.TenantID, x.Name, x.CreatedAt = "other", "other", "RENAMED", time.Now() // ignored
		x.Ciphertext, x.Nonce, x.ValueBytes, x.KeyID = []byte("resealed"), []byte("other nonce!"), 8, "k2"
		x.Description = "rotated"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateSecret: %v", err)
	}
	want := *sec
	want.Ciphertext, want.Nonce, want.ValueBytes, want.KeyID, want.Description = []byte("resealed"), []byte("other nonce!"), 8, "k2", "rotated"
	want.UpdatedAt = got.UpdatedAt
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("UpdateSecret (-want +got):\n%s", diff)
	}
	if !got.UpdatedAt.After(sec.UpdatedAt) {
		t.Errorf("UpdatedAt %v not after %v", got.UpdatedAt, sec.UpdatedAt)
	}
	read, err := s.GetSecret(ctx, sec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, read); diff != "" {
		t.Errorf("GetSecret after update (-want +got):\n%s", diff)
	}

	boom := errors.New("boom")
	if _, err := s.UpdateSecret(ctx, sec.Name, func(x *store.Secret) error {
		x.Description = "lost"
		return boom
	}); !errors.Is(err, boom) {
		t.Errorf("aborted update returned %v, want fn's error", err)
	}
	_, err = s.UpdateSecret(ctx, sec.Name, func(x *store.Secret) error { x.Ciphertext = nil; return nil })
	wantErr(t, "update leaving no value", err, errdefs.ErrInvalid, "invalid_secret")
	if read, err := s.GetSecret(ctx, sec.Name); err != nil || read.Description != "rotated" || string(read.Ciphertext) != "resealed" {
		t.Errorf("after aborted updates: %+v, %v", read, err)
	}
	_, err = s.UpdateSecret(ctx, "MISSING", func(*store.Secret) error { return nil })
	wantErr(t, "update of a missing name", err, errdefs.ErrNotFound, "secret_not_found")
}

func testSecretDelete(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	if err := s.CreateSecret(ctx, newSecret("GONE")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSecret(ctx, "GONE"); err != nil {
		t.Fatalf("DeleteSecret: %v", err)
	}
	_, err := s.GetSecret(ctx, "GONE")
	wantErr(t, "get after delete", err, errdefs.ErrNotFound, "secret_not_found")
	wantErr(t, "second delete", s.DeleteSecret(ctx, "GONE"), errdefs.ErrNotFound, "secret_not_found")
	// The name is free again.
	if err := s.CreateSecret(ctx, newSecret("GONE")); err != nil {
		t.Errorf("create after delete: %v", err)
	}
}

func testSecretNames(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	for _, name := range []string{"A", "a.b-c_d", "_x", "9lives", strings.Repeat("n", api.MaxSecretName)} {
		if err := s.CreateSecret(ctx, newSecret(name)); err != nil {
			t.Errorf("name %q: %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", ".hidden", "-flag", "a/b", "a b", "é", "a\x00", "a%2Fb",
		strings.Repeat("n", api.MaxSecretName+1)} {
		wantErr(t, "name "+name, s.CreateSecret(ctx, newSecret(name)), errdefs.ErrInvalid, "invalid_secret_name")
	}
	long := newSecret("LONG_DESCRIPTION")
	long.Description = strings.Repeat("d", api.MaxSecretDescription+1)
	wantErr(t, "long description", s.CreateSecret(ctx, long), errdefs.ErrInvalid, "invalid_secret")
	noValue := newSecret("NO_VALUE")
	noValue.Ciphertext = nil
	wantErr(t, "no sealed value", s.CreateSecret(ctx, noValue), errdefs.ErrInvalid, "invalid_secret")
}

// testSecretKinds: a secret is of kind env unless made a registry one,
// bound to its host; the kind and the host are kept, checked and never
// changed by an update.
func testSecretKinds(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	plain := newSecret("PLAIN")
	if err := s.CreateSecret(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if plain.Kind != api.SecretKindEnv || plain.Registry != "" {
		t.Errorf("a secret made without a kind is %q bound to %q; want env and none", plain.Kind, plain.Registry)
	}
	reg := newSecret("GHCR_PASSWORD")
	reg.Kind, reg.Registry = api.SecretKindRegistry, "ghcr.io"
	if err := s.CreateSecret(ctx, reg); err != nil {
		t.Fatalf("CreateSecret of a registry secret: %v", err)
	}
	got, err := s.GetSecret(ctx, reg.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != api.SecretKindRegistry || got.Registry != "ghcr.io" {
		t.Errorf("GetSecret of a registry secret: kind %q registry %q", got.Kind, got.Registry)
	}
	list, err := s.ListSecrets(ctx)
	if err != nil || len(list) != 2 || list[0].Kind != api.SecretKindRegistry || list[1].Kind != api.SecretKindEnv {
		t.Errorf("ListSecrets = %+v, %v; want the registry secret then the env one", list, err)
	}
	for _, bad := range []struct{ kind, registry string }{
		{"other", ""}, {"other", "ghcr.io"}, {api.SecretKindRegistry, ""}, {api.SecretKindEnv, "ghcr.io"}, {"", "ghcr.io"},
	} {
		sec := newSecret("BAD")
		sec.Kind, sec.Registry = bad.kind, bad.registry
		wantErr(t, fmt.Sprintf("kind %q registry %q", bad.kind, bad.registry), s.CreateSecret(ctx, sec), errdefs.ErrInvalid, "invalid_secret_kind")
	}
	// An update keeps both, whatever fn sets: rebinding a value to another
	// host would send it there.
	for _, name := range []string{plain.Name, reg.Name} {
		before, err := s.GetSecret(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		after, err := s.UpdateSecret(ctx, name, func(x *store.Secret) error {
			x.Kind, x.Registry, x.Description = api.SecretKindRegistry, "evil.example", "moved"
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateSecret: %v", err)
		}
		read, err := s.GetSecret(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []*store.Secret{after, read} {
			if x.Kind != before.Kind || x.Registry != before.Registry || x.Description != "moved" {
				t.Errorf("%s after an update moving it: kind %q registry %q description %q; want %q %q moved",
					name, x.Kind, x.Registry, x.Description, before.Kind, before.Registry)
			}
		}
	}
}

func testSecretIsolation(t *testing.T, s store.Store) {
	a, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	if err := s.CreateSecret(ctxA, newSecret("A_ONLY")); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListSecrets(ctxB)
	if err != nil || len(list) != 0 {
		t.Errorf("B lists %+v, %v; want nothing", list, err)
	}
	_, err = s.GetSecret(ctxB, "A_ONLY")
	wantErr(t, "B gets A's secret", err, errdefs.ErrNotFound, "secret_not_found")
	_, err = s.UpdateSecret(ctxB, "A_ONLY", func(x *store.Secret) error { x.Description = "B was here"; return nil })
	wantErr(t, "B updates A's secret", err, errdefs.ErrNotFound, "secret_not_found")
	wantErr(t, "B deletes A's secret", s.DeleteSecret(ctxB, "A_ONLY"), errdefs.ErrNotFound, "secret_not_found")
	// Naming A's tenant does not put B's secret there.
	planted := newSecret("PLANTED")
	planted.TenantID = a.ID
	if err := s.CreateSecret(ctxB, planted); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSecret(ctxA, "PLANTED"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("B's secret naming A's tenant is A's: %v", err)
	}
	// An admin reaches only its own tenant's secrets too.
	_, admin := newTenant(t, s, "admin")
	admin = as(tenantOf(t, admin), api.RoleAdmin)
	_, err = s.GetSecret(admin, "A_ONLY")
	wantErr(t, "an admin of another tenant gets A's secret", err, errdefs.ErrNotFound, "secret_not_found")

	got, err := s.GetSecret(ctxA, "A_ONLY")
	if err != nil || got.Description != "for A_ONLY" {
		t.Errorf("A's secret after B's attempts: %+v, %v", got, err)
	}
	list, err = s.ListSecrets(ctxA)
	if err != nil || len(list) != 1 {
		t.Errorf("A lists %d secrets, %v; want 1", len(list), err)
	}
}

// tenantOf returns the tenant of ctx's principal.
func tenantOf(t *testing.T, ctx context.Context) string {
	t.Helper()
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sc.TenantID
}

func testSecretNoPrincipal(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	if err := s.CreateSecret(ctx, newSecret("S")); err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	for _, c := range []struct {
		what string
		ctx  context.Context
	}{{"no principal", bg}, {"the system without a principal", system()}} {
		_, err := s.GetSecret(c.ctx, "S")
		wantErr(t, "GetSecret, "+c.what, err, errdefs.ErrForbidden, "no_tenant")
		_, err = s.UpdateSecret(c.ctx, "S", func(*store.Secret) error { return nil })
		wantErr(t, "UpdateSecret, "+c.what, err, errdefs.ErrForbidden, "no_tenant")
		wantErr(t, "DeleteSecret, "+c.what, s.DeleteSecret(c.ctx, "S"), errdefs.ErrForbidden, "no_tenant")
		wantErr(t, "CreateSecret, "+c.what, s.CreateSecret(c.ctx, newSecret("T")), errdefs.ErrForbidden, "no_tenant")
	}
	_, err := s.ListSecrets(bg)
	wantErr(t, "ListSecrets without principal", err, errdefs.ErrForbidden, "no_tenant")
}

func testSecretKeyIDs(t *testing.T, s store.Store) {
	_, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	before, err := s.SecretKeyIDs(system())
	if err != nil {
		t.Fatalf("SecretKeyIDs: %v", err)
	}
	for ctx, keys := range map[context.Context][]string{ctxA: {"kA", "kA", "kOld"}, ctxB: {"kA"}} {
		for _, k := range keys {
			sec := newSecret("S_" + ids.Token(4))
			sec.KeyID = k
			if err := s.CreateSecret(ctx, sec); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.SecretKeyIDs(system())
	if err != nil {
		t.Fatalf("SecretKeyIDs: %v", err)
	}
	if got["kA"]-before["kA"] != 3 || got["kOld"]-before["kOld"] != 1 {
		t.Errorf("SecretKeyIDs = %v (before %v); want 3 more under kA and 1 more under kOld", got, before)
	}
	_, err = s.SecretKeyIDs(ctxA)
	wantErr(t, "SecretKeyIDs as a member", err, errdefs.ErrForbidden, "system_only")
	_, err = s.SecretKeyIDs(as(tenantOf(t, ctxA), api.RoleAdmin))
	wantErr(t, "SecretKeyIDs as an admin", err, errdefs.ErrForbidden, "system_only")
}
