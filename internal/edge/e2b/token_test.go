package e2b

import (
	"bytes"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestTokensKept: an envd access token issued before, and a URL signed
// with it, keep verifying with the same key (e2b.key outlives a restart
// and an upgrade). The signature is the SDK's, computed apart from this
// package.
func TestTokensKept(t *testing.T) {
	const keyID, sandboxID = "01jq3v9x7k2m4n6p8r0s2t4v6k", "01jq3v9x7k2m4n6p8r0s2t4v6w"
	const tok = keyID + ".LJtmz_5PpNmhYKuMNrcPuydnmcqciVi14aVHEzThEaY"
	ts := tokens{key: bytes.Repeat([]byte{7}, 32)}
	if got := ts.sign(keyID, sandboxID); got != tok {
		t.Errorf("sign = %s, want %s", got, tok)
	}
	if got, err := ts.verify(tok, sandboxID); err != nil || got != keyID {
		t.Errorf("verify = %s, %v", got, err)
	}

	h := New(Config{Keys: fakeKeys{keyID}, Key: bytes.Repeat([]byte{7}, 32)})
	q := url.Values{"path": {"/home/user/a.txt"}, "username": {"user"}, "signature": {"v1_D5m0rb6U+02HZQ3woRfZ1GLhwEUmlwy+P3Idj3Pod8s"}}
	r := httptest.NewRequest("GET", envdPrefix+"/files?"+q.Encode(), nil)
	if got, err := h.signedKey(r, sandboxID); err != nil || got != keyID {
		t.Errorf("signedKey = %s, %v", got, err)
	}
}
