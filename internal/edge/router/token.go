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

// signer makes and checks tokens: "<expiry, unix seconds>.<MAC>", where
// MAC = base64url(HMAC-SHA256(key, purpose \n sandbox id \n port \n expiry))
// (mac.Key.Sum). A token is good for one port of one sandbox until its
// expiry.
type signer struct {
	key mac.Key
}

// sum is the MAC of t for purpose until exp (as FormatExpiry writes it).
func (s signer) sum(purpose string, t Target, exp string) string {
	return s.key.Sum(purpose, t.SandboxID, strconv.Itoa(t.Port), exp)
}

// sign returns the token of t for purpose, good until exp (to the second).
func (s signer) sign(purpose string, t Target, exp time.Time) string {
	e := mac.FormatExpiry(exp)
	return e + "." + s.sum(purpose, t, e)
}

// verify checks tok against t and purpose at now and returns its expiry.
// A token may not reach further than MaxURLTTL (and a minute of clock
// slack) into the future, whatever it says.
func (s signer) verify(purpose, tok string, t Target, now time.Time) (time.Time, error) {
	es, sum, ok := strings.Cut(tok, ".")
	if !ok {
		return time.Time{}, errTokenMalformed
	}
	exp, ok := mac.ParseExpiry(es)
	if !ok {
		return time.Time{}, errTokenMalformed
	}
	if !mac.Equal(sum, s.sum(purpose, t, es)) {
		return time.Time{}, errTokenBad
	}
	if mac.Expired(exp, now) {
		return time.Time{}, errTokenExpired
	}
	if exp.After(now.Add(MaxURLTTL + time.Minute)) {
		return time.Time{}, errTokenMalformed
	}
	return exp, nil
}
