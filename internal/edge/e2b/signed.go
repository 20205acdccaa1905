package e2b

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/mac"
)

// Keys names the keys whose envd tokens may have signed a URL for a
// sandbox: its tenant's. A signed URL names no key, so each is tried.
type Keys interface {
	KeyIDs(ctx context.Context, sandboxID string) ([]string, error)
}

// errBadSignature is every failure of a signed URL alike.
var errBadSignature = errdefs.New(errdefs.ErrUnauthorized, "invalid_signature", "the URL's signature is not valid for this sandbox, file and operation, or has expired")

// signedKey checks a /files request signed as the SDK's downloadUrl and
// uploadUrl sign it, and returns the key whose envd token signed it: the
// signature is "v1_" and the unpadded base64 of
// SHA-256(path:operation:user:token[:expiration]), operation "read" for a
// download and "write" for an upload, expiration (unix seconds, when the
// URL has one) not yet passed. The format is the SDK's, which signs URLs
// itself: it must not change.
func (h *Handler) signedKey(r *http.Request, sandboxID string) (string, error) {
	q := r.URL.Query()
	sig, ok := strings.CutPrefix(q.Get("signature"), "v1_")
	if !ok || h.cfg.Keys == nil {
		return "", errBadSignature
	}
	op := "read"
	if r.Method == http.MethodPost {
		op = "write"
	}
	exp := q.Get("signature_expiration")
	if exp != "" {
		end, ok := mac.ParseExpiry(exp)
		if !ok || mac.Expired(end, time.Now()) {
			return "", errBadSignature
		}
	}
	keys, err := h.cfg.Keys.KeyIDs(r.Context(), sandboxID)
	if err != nil {
		return "", errBadSignature
	}
	for _, k := range keys {
		raw := q.Get("path") + ":" + op + ":" + q.Get("username") + ":" + h.tokens.sign(k, sandboxID)
		if exp != "" {
			raw += ":" + exp
		}
		sum := sha256.Sum256([]byte(raw))
		want := base64.RawStdEncoding.EncodeToString(sum[:])
		if mac.Equal(sig, want) {
			return k, nil
		}
	}
	return "", errBadSignature
}
