package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// newTenantKey creates a tenant with one key and returns the full key.
func newTenantKey(t *testing.T, st store.Store, role string) (store.Key, string) {
	t.Helper()
	tn := store.Tenant{ID: ids.New(), Name: "t-" + ids.Token(4)}
	k, full := NewKey(tn.ID, "test", role)
	if err := st.CreateTenant(tenancy.System(context.Background()), tn, k); err != nil {
		t.Fatalf("CreateTenant: %v", err)
	}
	return k, full
}

func TestAuthenticate(t *testing.T) {
	st := openStore(t)
	a := &Authenticator{Store: st}
	ctx := context.Background()
	k, full := newTenantKey(t, st, api.RoleAdmin)

	for _, header := range []string{"Bearer " + full, "bearer " + full, "  BEARER   " + full + " "} {
		p, err := authenticate(a, ctx, header)
		if err != nil {
			t.Fatalf("Authenticate(%q): %v", header, err)
		}
		if diff := cmp.Diff(tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: api.RoleAdmin}, p); diff != "" {
			t.Errorf("principal (-want +got):\n%s", diff)
		}
	}

	id, secret, _ := ParseKey(full)
	_, other := NewKey(k.TenantID, "never stored", api.RoleMember)
	wrongSecret := "hk_" + id + "_" + strings.Repeat("a", len(secret))
	tests := []struct {
		name, header, code string
	}{
		{"no header", "", "missing_api_key"},
		{"blank header", "   ", "missing_api_key"},
		{"no token", "Bearer ", "missing_api_key"},
		{"basic auth", "Basic dXNlcjpwYXNz", "invalid_api_key"},
		{"bare key", full, "invalid_api_key"},
		{"malformed key", "Bearer hk_nope", "invalid_api_key"},
		{"unknown id", "Bearer " + other, "invalid_api_key"},
		{"wrong secret", "Bearer " + wrongSecret, "invalid_api_key"},
	}
	msgs := map[string]string{}
	for _, tt := range tests {
		_, err := authenticate(a, ctx, tt.header)
		wantErr(t, tt.name, err, errdefs.ErrUnauthorized, tt.code)
		_, _, msgs[tt.name] = errdefs.Classify(err)
	}
	if msgs["unknown id"] != msgs["wrong secret"] {
		t.Errorf("unknown id answers %q, wrong secret %q: they must not differ", msgs["unknown id"], msgs["wrong secret"])
	}

	// A revoked key no longer works, though it was just used. (Another
	// admin key is made first: the last one cannot be deleted.)
	newTenantKey(t, st, api.RoleAdmin)
	owner := tenancy.With(ctx, tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role})
	if _, err := a.Revoke(owner, k.ID, false); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	_, err := authenticate(a, ctx, "Bearer "+full)
	wantErr(t, "deleted key", err, errdefs.ErrUnauthorized, "invalid_api_key")
}

func TestAuthenticateTouchesOncePerInterval(t *testing.T) {
	st := openStore(t)
	now := time.Date(2025, 5, 5, 10, 0, 0, 0, time.UTC)
	a := &Authenticator{Store: st, now: func() time.Time { return now }}
	ctx := context.Background()
	k, full := newTenantKey(t, st, api.RoleMember)

	lastUsed := func() *time.Time {
		t.Helper()
		got, err := st.LookupKey(ctx, k.ID)
		if err != nil {
			t.Fatalf("LookupKey: %v", err)
		}
		return got.LastUsedAt
	}
	if lastUsed() != nil {
		t.Fatal("a new key has LastUsedAt")
	}
	auth := func() {
		t.Helper()
		if _, err := authenticate(a, ctx, "Bearer "+full); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	}
	steps := []struct {
		advance time.Duration
		want    time.Time
	}{
		{0, now},                            // first use is written
		{30 * time.Second, now},             // within the interval: not written
		{29 * time.Second, now},             // still within
		{time.Second, now.Add(time.Minute)}, // a minute after the last write
		{10 * time.Second, now.Add(time.Minute)},
	}
	clock := now
	for i, s := range steps {
		clock = clock.Add(s.advance)
		a.now = func() time.Time { return clock }
		auth()
		if got := lastUsed(); got == nil || !got.Equal(s.want) {
			t.Errorf("step %d at %v: LastUsedAt = %v, want %v", i, clock, got, s.want)
		}
	}

	// A failed authentication touches nothing.
	other, otherFull := newTenantKey(t, st, api.RoleMember)
	id, _, _ := ParseKey(otherFull)
	if _, err := authenticate(a, ctx, "Bearer hk_"+id+"_"+strings.Repeat("z", 52)); err == nil {
		t.Fatal("wrong secret authenticated")
	}
	if got, err := st.LookupKey(ctx, other.ID); err != nil || got.LastUsedAt != nil {
		t.Errorf("key after a failed attempt: LastUsedAt %v, %v; want nil", got.LastUsedAt, err)
	}
}
