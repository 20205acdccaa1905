package router

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
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
// MAC = base64url(HMAC-SHA256(key, purpose \n sandbox id \n port \n expiry)).
// A token is good for one port of one sandbox until its expiry.
type signer struct {
	key []byte
}

func (s signer) mac(purpose string, t Target, exp int64) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s\n%s\n%d\n%d", purpose, t.SandboxID, t.Port, exp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sign returns the token of t for purpose, good until exp (to the second).
func (s signer) sign(purpose string, t Target, exp time.Time) string {
	e := exp.Unix()
	return strconv.FormatInt(e, 10) + "." + s.mac(purpose, t, e)
}

// verify checks tok against t and purpose at now and returns its expiry.
// A token may not reach further than MaxURLTTL (and a minute of clock
// slack) into the future, whatever it says.
func (s signer) verify(purpose, tok string, t Target, now time.Time) (time.Time, error) {
	es, mac, ok := strings.Cut(tok, ".")
	if !ok || len(es) == 0 || len(es) > 12 || es[0] == '0' {
		return time.Time{}, errTokenMalformed
	}
	e, err := strconv.ParseInt(es, 10, 64)
	if err != nil || e <= 0 {
		return time.Time{}, errTokenMalformed
	}
	if !hmac.Equal([]byte(mac), []byte(s.mac(purpose, t, e))) {
		return time.Time{}, errTokenBad
	}
	exp := time.Unix(e, 0)
	if !now.Before(exp) {
		return time.Time{}, errTokenExpired
	}
	if exp.After(now.Add(MaxURLTTL + time.Minute)) {
		return time.Time{}, errTokenMalformed
	}
	return exp, nil
}
