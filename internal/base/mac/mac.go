// Package mac is what the server's signed tokens share: preview URLs and
// cookies (edge/router), the gateway's per-sandbox tokens (edge/gateway),
// envd access tokens and signed /files URLs (edge/e2b). Each scheme keeps
// its own format on the wire; here are the mechanics under them: an
// HMAC-SHA256 under a purpose over fields, written in unpadded base64url,
// compared in constant time, and an expiry in unix seconds.
//
// A token's MAC is a function of its key and fields alone, so what one
// start signed verifies after a restart with the same key (keyfile keeps
// it in the data directory).
package mac

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"time"
)

// Key signs one scheme's tokens.
type Key []byte

// Sum is the MAC of fields for purpose: unpadded base64url of
// HMAC-SHA256(k, purpose \n field \n field ...). The purpose keeps a
// token of one kind from passing for another signed with the same key.
func (k Key) Sum(purpose string, fields ...string) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(purpose))
	for _, f := range fields {
		m.Write([]byte{'\n'})
		m.Write([]byte(f))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify reports whether sum is k's Sum of fields for purpose.
func (k Key) Verify(sum, purpose string, fields ...string) bool {
	return Equal(sum, k.Sum(purpose, fields...))
}

// Equal reports whether two signatures are the same, in a time that
// tells nothing of where they differ.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// FormatExpiry writes the end of a token's life as tokens carry it: unix
// seconds in decimal.
func FormatExpiry(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10)
}

// ParseExpiry reads an expiry as FormatExpiry writes it and nothing else:
// 1 to 12 digits without a leading zero (no sign, no space), so that a
// token has one spelling of its expiry.
func ParseExpiry(s string) (time.Time, bool) {
	if len(s) == 0 || len(s) > 12 || s[0] == '0' {
		return time.Time{}, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// Expired reports whether a token good until exp has ended at now: it is
// good before exp, not at it.
func Expired(exp, now time.Time) bool {
	return !now.Before(exp)
}
