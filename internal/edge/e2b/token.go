package e2b

import (
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/mac"
)

// tokens makes and checks envd access tokens: "<key id>.<MAC>", where MAC
// is base64url(HMAC-SHA256(key, purpose \n key id \n sandbox id))
// (mac.Key.Sum). A token is good for one sandbox, as the key it names,
// for as long as that key exists: it carries no secret of the key, and a
// client that holds it (a browser, say) can reach that one sandbox and
// nothing else.
type tokens struct {
	key mac.Key
}

const tokenPurpose = "hutch-e2b-envd"

// sign returns the token of sandboxID for keyID.
func (t tokens) sign(keyID, sandboxID string) string {
	return keyID + "." + t.key.Sum(tokenPurpose, keyID, sandboxID)
}

// verify returns the key id tok names, if tok is sandboxID's.
func (t tokens) verify(tok, sandboxID string) (string, error) {
	keyID, sum, ok := strings.Cut(tok, ".")
	if !ok || keyID == "" || !t.key.Verify(sum, tokenPurpose, keyID, sandboxID) {
		return "", errdefs.New(errdefs.ErrUnauthorized, "invalid_access_token", "the X-Access-Token is not this sandbox's")
	}
	return keyID, nil
}
