package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// TestBeginKey: a request by a key id the server vouched for carries the
// key's principal while the key exists, and ends when it is revoked; an
// unknown id is refused as an invalid key.
func TestBeginKey(t *testing.T) {
	st := openStore(t)
	a := &Authenticator{Store: st}
	k, _ := newTenantKey(t, st, api.RoleMember)

	ctx, end, err := a.BeginKey(context.Background(), k.ID)
	if err != nil {
		t.Fatalf("BeginKey: %v", err)
	}
	defer end()
	if p, _ := tenancy.From(ctx); p != (tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: api.RoleMember}) {
		t.Errorf("principal %+v", p)
	}
	if _, err := a.Revoke(tenancy.With(context.Background(), tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: api.RoleMember}), k.ID, false); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), ErrKeyRevoked) {
		t.Errorf("cause %v, want ErrKeyRevoked", context.Cause(ctx))
	}

	if _, _, err := a.BeginKey(context.Background(), k.ID); !errors.Is(err, errdefs.ErrUnauthorized) {
		t.Errorf("BeginKey of the revoked key: %v, want unauthorized", err)
	}
	if _, _, err := a.BeginKey(context.Background(), "nosuchkey"); !errdefs.HasCode(err, "invalid_api_key") {
		t.Errorf("BeginKey of an unknown id: %v, want invalid_api_key", err)
	}
}
