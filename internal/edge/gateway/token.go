package gateway

import (
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/internal/base/mac"
)

// A sandbox's token is "hutch_sbx_<sandbox id>.<MAC>", with MAC =
// base64url(HMAC-SHA256(key, tokenPurpose \n sandbox id)) (mac.Key.Sum).
// It names one sandbox and is good while that sandbox runs: nothing is
// stored, and deleting the key file revokes every token at the next
// start.
const (
	tokenPrefix  = "hutch_sbx_"
	tokenPurpose = "hutch-provider-token"
)

// MinKeyBytes is the shortest key that signs tokens.
const MinKeyBytes = 32

type tokens struct{ key mac.Key }

// issue returns sandboxID's token.
func (t tokens) issue(sandboxID string) string {
	return tokenPrefix + sandboxID + "." + t.key.Sum(tokenPurpose, sandboxID)
}

// verify returns the sandbox a token names, or false.
func (t tokens) verify(tok string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return "", false
	}
	id, sum, ok := strings.Cut(rest, ".")
	if !ok || id == "" || !t.key.Verify(sum, tokenPurpose, id) {
		return "", false
	}
	return id, true
}

// credentialHeaders are where callers put a key: SDKs send the sandbox's
// token where they would send the provider's key. All of them are removed
// before a call goes upstream.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"}

// presented returns the token in r, from any credential header.
func presented(r *http.Request) string {
	for _, h := range credentialHeaders {
		v := strings.TrimSpace(r.Header.Get(h))
		if after, ok := cutScheme(v, "Bearer"); ok {
			v = after
		}
		if strings.HasPrefix(v, tokenPrefix) {
			return v
		}
	}
	return ""
}

// cutScheme removes an auth scheme, matched without regard to case.
func cutScheme(v, scheme string) (string, bool) {
	if len(v) > len(scheme) && strings.EqualFold(v[:len(scheme)], scheme) && v[len(scheme)] == ' ' {
		return strings.TrimSpace(v[len(scheme)+1:]), true
	}
	return v, false
}
