package auth

import (
	"context"
	"errors"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/store"
)

// StoreChanged does here what c, a write the store told (store.Notifier),
// did on the control plane that made it: a key revoked anywhere ends the
// requests of it in flight here and is forgotten, as Revoke does; a
// tenant whose state changed has its keys forgotten, as TenantChanged
// does (a suspension leaves requests in flight alone, on every plane,
// and a deletion revokes the keys, which is told too). This plane's own
// changes come back and find nothing left to do. On a resync it forgets
// every key and ends the requests of those that are gone (recheck).
func (a *Authenticator) StoreChanged(ctx context.Context, c store.Change) {
	switch c.Kind {
	case store.ChangeKey:
		if ended := a.forget([]string{c.KeyID}); ended > 0 && a.Log != nil {
			a.Log.InfoContext(ctx, "a key revoked on another control plane", logattr.Key(c.KeyID),
				logattr.Tenant(c.TenantID), "requests_ended", ended)
		}
	case store.ChangeTenant:
		a.TenantChanged(c.TenantID)
	case store.ChangeResync:
		a.keys.forgetAll()
		a.recheck(ctx)
	}
}

// recheck ends the requests in flight whose key is gone or no longer
// takes requests: revocations, and deletions of tenants, whose telling
// was lost. It reads each key once, from the store.
func (a *Authenticator) recheck(ctx context.Context) {
	var gone []string
	for _, id := range a.sessions.keys() {
		k, err := a.Store.LookupKey(ctx, id)
		if err == nil {
			_, err = principalOf(k)
		}
		switch {
		case err == nil:
		case errors.Is(err, errdefs.ErrNotFound), errors.Is(err, errInvalidKey):
			gone = append(gone, id)
		case a.Log != nil:
			a.Log.WarnContext(ctx, "recheck a key after the store's resync", logattr.Key(id), "err", err)
		}
	}
	if ended := a.forget(gone); ended > 0 && a.Log != nil {
		a.Log.InfoContext(ctx, "keys gone while the store's changes were lost", "keys", gone, "requests_ended", ended)
	}
}
