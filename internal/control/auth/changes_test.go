package auth

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/postgres"
	"github.com/hutchdev/hutch/internal/testutil"
)

func TestMain(m *testing.M) { testutil.RunWithPostgres(m) }

// plane is one control plane: an Authenticator on a Store of its own
// over the shared database dsn, told the store's changes as hutch serve
// tells it. Its clock stands still, so a key it keeps never expires:
// only a change told can make it read the key again.
func plane(t *testing.T, dsn string) (*Authenticator, store.Store) {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	a := &Authenticator{Store: st}
	now := time.Now()
	a.now = func() time.Time { return now }
	stop, err := st.Subscribe(context.Background(), a.StoreChanged)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return a, st
}

// TestRevokeOnAnotherPlane: a key revoked through plane A ends, within a
// second, the request of it that plane B serves, and B refuses the key
// from then on though it kept it in memory.
func TestRevokeOnAnotherPlane(t *testing.T) {
	dsn := testutil.PostgresURL(t)
	a, st := plane(t, dsn)
	b, _ := plane(t, dsn)
	k, full := newTenantKey(t, st, api.RoleMember)
	ctx := begun(t, b, full)
	owner := tenancy.With(context.Background(), tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role})
	start := time.Now()
	if _, err := a.Revoke(owner, k.ID, false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
		if context.Cause(ctx) != ErrKeyRevoked {
			t.Errorf("B's request ended with %v; want ErrKeyRevoked", context.Cause(ctx))
		}
		t.Logf("B's request ended %v after A's revocation returned", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("B's request of a key revoked on A goes on after a second")
	}
	_, err := authenticate(b, context.Background(), "Bearer "+full)
	wantErr(t, "B, the next request of a key revoked on A", err, errdefs.ErrUnauthorized, "invalid_api_key")
}

// TestTenantChangedOnAnotherPlane: a tenant suspended through plane A is
// seen suspended by plane B's next request, though B kept its key as an
// active tenant's.
func TestTenantChangedOnAnotherPlane(t *testing.T) {
	dsn := testutil.PostgresURL(t)
	_, st := plane(t, dsn)
	b, _ := plane(t, dsn)
	k, full := newTenantKey(t, st, api.RoleMember)
	if p, err := authenticate(b, context.Background(), "Bearer "+full); err != nil || p.Suspended {
		t.Fatalf("B, an active tenant's key: %+v, %v", p, err)
	}
	if _, err := store.TransitionTenant(tenancy.System(context.Background()), st, k.TenantID,
		[]api.TenantState{api.TenantActive}, api.TenantSuspended, nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, err := authenticate(b, context.Background(), "Bearer "+full)
		if err != nil {
			t.Fatal(err)
		}
		if p.Suspended {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("B still takes the key of a tenant suspended on A as an active tenant's after a second")
		}
	}
}

// TestResync: after the feed lost changes (a resync), what was kept is
// read again, and a request of a key revoked meanwhile ends.
func TestResync(t *testing.T) {
	st := openStore(t)
	a := &Authenticator{Store: st}
	now := time.Now()
	a.now = func() time.Time { return now }
	k, full := newTenantKey(t, st, api.RoleMember)
	kept, keptFull := newTenantKey(t, st, api.RoleMember)
	ctx, other := begun(t, a, full), begun(t, a, keptFull)
	// Revoked behind the Authenticator's back, as on a plane whose
	// change was lost.
	if _, err := st.DeleteKey(tenancy.System(context.Background()), k.ID, false); err != nil {
		t.Fatal(err)
	}
	a.StoreChanged(context.Background(), store.Change{Kind: store.ChangeResync})
	if context.Cause(ctx) != ErrKeyRevoked {
		t.Errorf("the request of a key revoked before a resync: cause %v; want ErrKeyRevoked", context.Cause(ctx))
	}
	if other.Err() != nil {
		t.Errorf("the request of key %s, still there, ended", kept.ID)
	}
	_, err := authenticate(a, context.Background(), "Bearer "+full)
	wantErr(t, "the key revoked before a resync", err, errdefs.ErrUnauthorized, "invalid_api_key")
}
