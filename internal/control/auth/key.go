// Package auth owns API keys and who a request is: it mints keys, checks
// the Authorization header against the store, revokes keys and ends the
// requests in flight they authenticated (Authenticator.Begin, Revoke),
// makes and lists a tenant's keys for the API (keys.go), revokes every
// key of a tenant being deleted (RevokeTenant), makes tenants with their
// first key (CreateTenant), and on first start creates the admin tenant
// and its key. A key of a suspended tenant is a principal marked
// suspended; one of a tenant being deleted is no key. What a principal
// may then touch is enforced by the store, which reads the principal auth
// puts in the context, and by the API's routes, which name the least role
// each takes.
package auth

import (
	"crypto/sha256"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

// A key reads hk_<keyid>_<secret>. The key id is public (it is the store's
// Key.ID, and hk_<keyid> its Prefix); the secret is 32 random bytes. Both
// are lowercase Crockford base32, which has no '_', so the key splits
// unambiguously.
const (
	keyPrefix    = "hk_"
	keyIDLen     = 12 // 60 random bits: unique enough for ids, and not a secret
	secretBytes  = 32
	minSecretLen = 16  // accept shorter or longer secrets than we mint today,
	maxSecretLen = 128 // but never hash unbounded input
	base32Chars  = "0123456789abcdefghjkmnpqrstvwxyz"
)

// NewKey mints a key for tenantID, created now. It returns the record to
// store and the full key to hand to the user once; only its hash is kept.
func NewKey(tenantID, name, role string) (store.Key, string) {
	id := ids.Token(8)[:keyIDLen]
	secret := ids.Token(secretBytes)
	return store.Key{
		ID:        id,
		TenantID:  tenantID,
		Name:      name,
		Role:      role,
		Prefix:    keyPrefix + id,
		Hash:      HashSecret(secret),
		CreatedAt: store.Time(time.Now()),
	}, keyPrefix + id + "_" + secret
}

// GenerateKey is a new, well-formed API key that no store holds yet: for
// $HUTCH_ADMIN_KEY, the admin key a fleet's first start makes.
func GenerateKey() string {
	_, full := NewKey("", "", "")
	return full
}

// HashSecret is what the store keeps of a key's secret. A plain SHA-256 is
// right here, not a slow password hash: the secret is 256 random bits, so
// there is nothing to guess by brute force, and a fast hash keeps every
// request cheap.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// ParseKey splits a full key into its id and secret. Anything that is not a
// well-formed key is an ErrUnauthorized error with code invalid_api_key.
func ParseKey(key string) (id, secret string, err error) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", "", errInvalidKey
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) != keyIDLen || !isBase32(id) ||
		len(secret) < minSecretLen || len(secret) > maxSecretLen || !isBase32(secret) {
		return "", "", errInvalidKey
	}
	return id, secret, nil
}

func isBase32(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(base32Chars, s[i]) < 0 {
			return false
		}
	}
	return true
}

// errInvalidKey is the one answer for a malformed, unknown or wrong key, so
// that the answer tells a caller nothing about which.
var errInvalidKey = errdefs.New(errdefs.ErrUnauthorized, "invalid_api_key", "invalid API key")

// errMissingKey is the answer when a request carries no key.
var errMissingKey = errdefs.New(errdefs.ErrUnauthorized, "missing_api_key",
	"an API key is required: send Authorization: Bearer <key>")
