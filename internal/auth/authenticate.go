package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/logattr"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/tenancy"
)

// TouchInterval is how often at most a key's LastUsedAt is written: often
// enough to tell a live key from a dead one, rarely enough that a busy key
// costs no write per request.
const TouchInterval = time.Minute

// maxTouched bounds the throttle's memory; past it, entries older than
// TouchInterval are dropped.
const maxTouched = 10_000

// Authenticator checks API keys. The zero value with Store set is ready;
// it is safe for concurrent use.
type Authenticator struct {
	Store store.Store
	Log   *slog.Logger // optional: where failed LastUsedAt writes are reported

	mu      sync.Mutex
	touched map[string]time.Time // key id → when LastUsedAt was last written
	now     func() time.Time     // tests stub the clock
}

// dummyHash is compared against when a key id is unknown, so that an
// unknown id and a wrong secret take the same work and get the same answer.
var dummyHash = HashSecret("hutch-unknown-key")

// Authenticate returns the principal of an Authorization header of the form
// "Bearer <key>". Every failure is an ErrUnauthorized error: code
// missing_api_key when there is no key, invalid_api_key otherwise, the same
// for a malformed key, an unknown key id and a wrong secret.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (tenancy.Principal, error) {
	key, err := bearer(header)
	if err != nil {
		return tenancy.Principal{}, err
	}
	id, secret, err := ParseKey(key)
	if err != nil {
		return tenancy.Principal{}, err
	}
	k, err := a.Store.LookupKey(ctx, id)
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
	p := tenancy.Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.Role}
	a.touch(tenancy.With(ctx, p), k.ID)
	return p, nil
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
