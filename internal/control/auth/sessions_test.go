package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestRevokeEndsRequests: Begin's context carries the principal and ends
// when its key is revoked, with ErrKeyRevoked; another key's does not; end
// releases the request; a revoked key begins nothing.
func TestRevokeEndsRequests(t *testing.T) {
	st := openStore(t)
	a := &Authenticator{Store: st}
	ctx := context.Background()
	k, full := newTenantKey(t, st, api.RoleMember)
	owner := tenancy.With(ctx, tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role})
	other, otherFull := NewKey(k.TenantID, "other", api.RoleMember)
	if err := st.CreateKey(tenancy.System(ctx), other); err != nil {
		t.Fatal(err)
	}

	rctx, end, err := a.Begin(ctx, "Bearer "+full)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	if p, ok := tenancy.From(rctx); !ok || p.KeyID != k.ID || p.TenantID != k.TenantID {
		t.Fatalf("principal %+v, %v", p, ok)
	}
	octx, oend, err := a.Begin(ctx, "Bearer "+otherFull)
	if err != nil {
		t.Fatal(err)
	}
	defer oend()
	done, doneEnd, err := a.Begin(ctx, "Bearer "+otherFull)
	if err != nil {
		t.Fatal(err)
	}
	doneEnd()
	if a.sessions.count(other.ID) != 1 {
		t.Errorf("%d requests of the other key held, want 1: end releases", a.sessions.count(other.ID))
	}
	if !errors.Is(context.Cause(done), context.Canceled) {
		t.Errorf("an ended request's context: %v", context.Cause(done))
	}
	_, _, err = a.Begin(ctx, "Bearer "+full+"x")
	wantErr(t, "wrong key", err, errdefs.ErrUnauthorized, "invalid_api_key")
	if a.sessions.count(k.ID) != 1 {
		t.Errorf("a failed Begin is held: %d requests of the key", a.sessions.count(k.ID))
	}

	ids, err := a.Revoke(owner, k.ID, false)
	if err != nil || len(ids) != 1 || ids[0] != k.ID {
		t.Fatalf("Revoke: %v, %v", ids, err)
	}
	select {
	case <-rctx.Done():
	default:
		t.Fatal("the revoked key's request goes on")
	}
	if !errors.Is(context.Cause(rctx), ErrKeyRevoked) {
		t.Errorf("cause %v, want ErrKeyRevoked", context.Cause(rctx))
	}
	if octx.Err() != nil {
		t.Error("another key's request ended")
	}
	_, _, err = a.Begin(ctx, "Bearer "+full)
	wantErr(t, "revoked key", err, errdefs.ErrUnauthorized, "invalid_api_key")
	_, err = a.Revoke(owner, k.ID, false)
	wantErr(t, "second revoke", err, errdefs.ErrNotFound, "key_not_found")
}

// revokeInLookup revokes a key between the lookup of a request and the
// answer: the narrowest race between Begin and Revoke.
type revokeInLookup struct {
	store.Store
	revoke func()
}

func (s *revokeInLookup) LookupKey(ctx context.Context, id string) (store.Key, error) {
	k, err := s.Store.LookupKey(ctx, id)
	if s.revoke != nil {
		s.revoke()
	}
	return k, err
}

// TestRevokeRacesBegin: a key revoked after its request's lookup found it
// still ends the request.
func TestRevokeRacesBegin(t *testing.T) {
	st := &revokeInLookup{Store: openStore(t)}
	a := &Authenticator{Store: st}
	ctx := context.Background()
	k, full := newTenantKey(t, st, api.RoleMember)
	owner := tenancy.With(ctx, tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role})
	st.revoke = func() {
		st.revoke = nil
		if _, err := a.Revoke(owner, k.ID, false); err != nil {
			t.Error(err)
		}
	}
	rctx, end, err := a.Begin(ctx, "Bearer "+full)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	if rctx.Err() == nil {
		t.Fatal("a request whose key was revoked during its lookup goes on")
	}
}
