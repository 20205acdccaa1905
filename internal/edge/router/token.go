package router

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/base/mac"
)

// Lifetimes of signed preview URLs.
const (
	DefaultURLTTL = time.Hour
	MaxURLTTL     = 24 * time.Hour
)

// KeyBytes is the size of the key that signs preview URLs and cookies.
const KeyBytes = 32

// Purposes keep a URL token from passing for a cookie and the reverse.
const (
	purposeURL     = "hutch-preview-url"
	purposeSession = "hutch-preview-session"
)

var (
	errTokenMalformed = errors.New("the token is malformed")
	errTokenExpired   = errors.New("the token has expired")
	errTokenBad       = errors.New("the token's signature does not match")
)

// signer makes and checks tokens: "<key id>.<expiry, unix seconds>.<MAC>",
// where MAC = base64url(HMAC-SHA256(key, purpose \n sandbox id \n port \n
// expiry \n key id)) (mac.Key.Sum). A token is good for one port of one
// sandbox until its expiry, and only while the API key it names, the one
// that minted it, is not revoked: the router checks that key on every
// request (grants.go). A token without a key id (what servers signed
// before) is refused: nothing would end it with its key.
type signer struct {
	key mac.Key
}

// sum is the MAC of t for purpose, keyID and exp (as FormatExpiry writes
// it).
func (s signer) sum(purpose string, t Target, keyID, exp string) string {
	return s.key.Sum(purpose, t.SandboxID, strconv.Itoa(t.Port), exp, keyID)
}

// sign returns the token of t for purpose, minted by keyID, good until
// exp (to the second). keyID must be a valid key id (validKeyID).
func (s signer) sign(purpose string, t Target, keyID string, exp time.Time) string {
	e := mac.FormatExpiry(exp)
	return keyID + "." + e + "." + s.sum(purpose, t, keyID, e)
}

// verify checks tok against t and purpose at now and returns the key id
// that minted it and its expiry. A token may not reach further than
// MaxURLTTL (and a minute of clock slack) into the future, whatever it
// says.
func (s signer) verify(purpose, tok string, t Target, now time.Time) (keyID string, exp time.Time, _ error) {
	keyID, rest, ok := strings.Cut(tok, ".")
	es, sum, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || !validKeyID(keyID) {
		return "", time.Time{}, errTokenMalformed
	}
	exp, ok = mac.ParseExpiry(es)
	if !ok {
		return "", time.Time{}, errTokenMalformed
	}
	if !mac.Equal(sum, s.sum(purpose, t, keyID, es)) {
		return "", time.Time{}, errTokenBad
	}
	if mac.Expired(exp, now) {
		return "", time.Time{}, errTokenExpired
	}
	if exp.After(now.Add(MaxURLTTL + time.Minute)) {
		return "", time.Time{}, errTokenMalformed
	}
	return keyID, exp, nil
}

// validKeyID reports whether id can be a key id in a token: 1 to 32
// lowercase letters and digits (auth's ids are 12 of base32), so that it
// holds no '.' nor a MAC field's '\n'.
func validKeyID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for _, c := range []byte(id) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
