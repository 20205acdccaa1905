package e2b

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// tokens makes and checks envd access tokens: "<key id>.<MAC>", where MAC
// is base64url(HMAC-SHA256(key, purpose \n key id \n sandbox id)). A token
// is good for one sandbox, as the key it names, for as long as that key
// exists: it carries no secret of the key, and a client that holds it
// (a browser, say) can reach that one sandbox and nothing else.
type tokens struct {
	key []byte
}

const tokenPurpose = "hutch-e2b-envd"

func (t tokens) mac(keyID, sandboxID string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(tokenPurpose + "\n" + keyID + "\n" + sandboxID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sign returns the token of sandboxID for keyID.
func (t tokens) sign(keyID, sandboxID string) string {
	return keyID + "." + t.mac(keyID, sandboxID)
}

// verify returns the key id tok names, if tok is sandboxID's.
func (t tokens) verify(tok, sandboxID string) (string, error) {
	keyID, mac, ok := strings.Cut(tok, ".")
	if !ok || keyID == "" || !hmac.Equal([]byte(mac), []byte(t.mac(keyID, sandboxID))) {
		return "", errdefs.New(errdefs.ErrUnauthorized, "invalid_access_token", "the X-Access-Token is not this sandbox's")
	}
	return keyID, nil
}
