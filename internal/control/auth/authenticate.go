package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/connlimit"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/store"
)

// TouchInterval is how often at most a key's LastUsedAt is written: often
// enough to tell a live key from a dead one, rarely enough that a busy key
// costs no write per request.
const TouchInterval = time.Minute

// maxTouched bounds the throttle's memory; past it, entries older than
// TouchInterval are dropped.
const maxTouched = 10_000

// Authenticator checks API keys and revokes them. The zero value with
// Store set is ready; it is safe for concurrent use. One Authenticator
// serves every door that takes API keys (the API and the preview router),
// so that a key it revokes ends the requests of each.
type Authenticator struct {
	Store store.Keys
	Log   *slog.Logger // optional: failed LastUsedAt writes and revocations
	// Quotas admits each key CreateKey makes against its tenant's quota
	// of keys; nil admits every one.
	Quotas *quota.Service

	mu       sync.Mutex
	touched  map[string]time.Time // key id → when LastUsedAt was last written
	now      func() time.Time     // tests stub the clock
	sessions sessions             // the requests in flight, by key (sessions.go)
	keys     keyCache             // the keys looked up (keycache.go)
}

// dummyHash is compared against when a key id is unknown, so that an
// unknown id and a wrong secret take the same work and get the same answer.
var dummyHash = HashSecret("hutch-unknown-key")

// Begin authenticates a request by its Authorization header, of the form
// "Bearer <key>", and returns the context to serve it with: it carries the
// principal, and it ends, with cause ErrKeyRevoked, as soon as the key is
// revoked (Revoke, or on another control plane whose revocation the store
// tells, StoreChanged), so a stream or WebSocket that selects on it ends
// with its key. Call end once the request is done; it releases what Begin
// holds. It is the only way in: there is no check that a request could
// outlive.
//
// Every failure is an ErrUnauthorized error: code missing_api_key when
// there is no key, invalid_api_key otherwise, the same for a malformed
// key, an unknown key id and a wrong secret. A success marks the
// connection ctx's request came on as authenticated
// (connlimit.Authenticated): it may then sit idle for the server's idle
// timeout, not the few seconds of one that never showed a key.
//
// The request is held under its key id before the key is looked up: a
// revocation that commits before the lookup makes the lookup fail, and one
// that commits after finds the request held. Either way no request
// outlives its key.
func (a *Authenticator) Begin(ctx context.Context, header string) (_ context.Context, end func(), _ error) {
	id, secret, err := parseHeader(header)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	remove := a.sessions.add(id, cancel)
	end = func() {
		remove()
		cancel(context.Canceled)
	}
	p, err := a.check(ctx, id, secret)
	if err != nil {
		end()
		return nil, nil, err
	}
	connlimit.Authenticated(ctx)
	return tenancy.With(ctx, p), end, nil
}

// BeginKey is Begin for a request that proved its key some other way: it
// carries a grant the server signed for key id (an E2B envd access token,
// internal/edge/e2b). The key must still exist, and the request ends, like one
// Begin serves, as soon as Revoke revokes the key; its connection is
// marked authenticated as Begin marks it. An unknown id is an
// invalid_api_key error.
func (a *Authenticator) BeginKey(ctx context.Context, id string) (_ context.Context, end func(), _ error) {
	ctx, cancel := context.WithCancelCause(ctx)
	remove := a.sessions.add(id, cancel)
	end = func() {
		remove()
		cancel(context.Canceled)
	}
	k, err := a.keys.lookup(ctx, a.Store, id, a.clock())
	if err != nil {
		end()
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, nil, errInvalidKey
		}
		return nil, nil, err
	}
	p, err := principalOf(k)
	if err != nil {
		end()
		return nil, nil, err
	}
	a.touch(tenancy.With(ctx, p), k.ID)
	connlimit.Authenticated(ctx)
	return tenancy.With(ctx, p), end, nil
}

// Revoke deletes key id of the caller's tenant and, with cascade, every
// key it created, transitively (store.Keys.DeleteKey, which says who may
// delete what), then ends every request in flight that those keys
// authenticated through Begin. It returns the ids revoked.
//
// It ends the requests this process serves; another control plane on the
// same store ends its own when the store tells it of the revocation
// (StoreChanged).
func (a *Authenticator) Revoke(ctx context.Context, id string, cascade bool) ([]string, error) {
	ids, err := a.Store.DeleteKey(ctx, id, cascade)
	if err != nil {
		return nil, err
	}
	ended := a.forget(ids)
	if a.Log != nil {
		a.Log.InfoContext(ctx, "revoked API keys", logattr.Key(id), "keys", ids, "requests_ended", ended)
	}
	return ids, nil
}

// RevokeTenant deletes every key of tenantID (store.Keys.DeleteKeysByTenant,
// the system's alone: a tenant's deletion) and ends every request in
// flight that they authenticated. It returns the ids revoked.
func (a *Authenticator) RevokeTenant(ctx context.Context, tenantID string) ([]string, error) {
	ids, err := a.Store.DeleteKeysByTenant(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	ended := a.forget(ids)
	if a.Log != nil {
		a.Log.InfoContext(ctx, "revoked a tenant's API keys", logattr.Tenant(tenantID), "keys", ids, "requests_ended", ended)
	}
	return ids, nil
}

// forget ends the requests of keys ids, revoked, and drops what it kept
// of them; it returns how many requests it ended.
func (a *Authenticator) forget(ids []string) int {
	a.keys.forget(ids, "")
	ended := a.sessions.end(ids, ErrKeyRevoked)
	a.mu.Lock()
	for _, k := range ids {
		delete(a.touched, k)
	}
	a.mu.Unlock()
	return ended
}

// TenantChanged forgets the keys of tenantID kept in memory, after its
// state changed in the store (a suspension, a resumption, a deletion):
// the next request of each reads it again.
func (a *Authenticator) TenantChanged(tenantID string) {
	a.keys.forget(nil, tenantID)
}

// parseHeader returns the key id and secret of an Authorization header.
func parseHeader(header string) (id, secret string, err error) {
	key, err := bearer(header)
	if err != nil {
		return "", "", err
	}
	return ParseKey(key)
}

// check looks key id up and compares its secret.
func (a *Authenticator) check(ctx context.Context, id, secret string) (tenancy.Principal, error) {
	k, err := a.keys.lookup(ctx, a.Store, id, a.clock())
	want := k.Hash
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		want = dummyHash
	case err != nil:
		return tenancy.Principal{}, err
	}
	if subtle.ConstantTimeCompare(HashSecret(secret), want) != 1 || err != nil {
		return tenancy.Principal{}, errInvalidKey
	}
	p, err := principalOf(k)
	if err != nil {
		return tenancy.Principal{}, err
	}
	a.touch(tenancy.With(ctx, p), k.ID)
	return p, nil
}

// principalOf is the caller a key makes: its tenant's, marked suspended
// while its tenant is. A key of a tenant being deleted is no key (its
// deletion revokes it first thing, and this covers the moment before).
func principalOf(k store.Key) (tenancy.Principal, error) {
	switch k.TenantState {
	case api.TenantDeleting, api.TenantDeleted:
		return tenancy.Principal{}, errInvalidKey
	}
	return tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role, Suspended: k.TenantState == api.TenantSuspended}, nil
}

// bearer returns the token of a Bearer Authorization header; the scheme is
// case-insensitive (RFC 9110).
func bearer(header string) (string, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", errMissingKey
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", errInvalidKey
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", errMissingKey
	}
	return token, nil
}

// touch writes the key's LastUsedAt unless it did so less than
// TouchInterval ago. A failed write does not fail the request.
func (a *Authenticator) touch(ctx context.Context, id string) {
	now := a.clock()
	a.mu.Lock()
	if a.touched == nil {
		a.touched = make(map[string]time.Time)
	}
	if last, ok := a.touched[id]; ok && now.Sub(last) < TouchInterval {
		a.mu.Unlock()
		return
	}
	if len(a.touched) >= maxTouched {
		for k, t := range a.touched {
			if now.Sub(t) >= TouchInterval {
				delete(a.touched, k)
			}
		}
	}
	a.touched[id] = now
	a.mu.Unlock()

	if err := a.Store.TouchKey(ctx, id, now); err != nil && a.Log != nil {
		a.Log.WarnContext(ctx, "record key use", logattr.Key(id), "err", err)
	}
}

func (a *Authenticator) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}
