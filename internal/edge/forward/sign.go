package forward

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// The headers of a forwarded request. A client's own are never trusted:
// a request that carries any of them is verified (Verifier.Accept) and
// refused unless a node signed it.
const (
	HeaderKeyID     = "Hutch-Forward-Key-Id" // the client's key id; "" for a preview the owner authorizes itself
	HeaderFrom      = "Hutch-Forward-From"   // the node that received the request
	HeaderTo        = "Hutch-Forward-To"     // the node it is forwarded to
	HeaderTime      = "Hutch-Forward-Time"   // Unix milliseconds when it was signed
	HeaderNonce     = "Hutch-Forward-Nonce"  // random, used once
	HeaderSignature = "Hutch-Forward-Signature"
	headerPrefix    = "Hutch-Forward-"
)

// Window is how far a forwarded request's time may be from the verifying
// node's clock: it bounds the replay cache, and the nodes' clocks must
// agree within it.
const Window = 30 * time.Second

// version is the first line of what is signed: a later format changes it.
const version = "hutch-forward/1"

// Hop is a forwarded request as its signature proves it.
type Hop struct {
	KeyID string // the client's key, as the receiving node authenticated it; "" for a preview hop
	From  string // the node that received it from the client
}

// signature is the HMAC-SHA256 under key of what a forwarded request
// asserts: its method, host, path and query, the key id, both nodes, the
// time and the nonce. The body is not signed: it streams (the fleet's
// network carries it; docs/ARCHITECTURE.md says what that asks of it).
func signature(key []byte, r *http.Request, keyID, from, to, ts, nonce string) string {
	m := hmac.New(sha256.New, key)
	for _, s := range []string{version, r.Method, r.Host, r.URL.RequestURI(), keyID, from, to, ts, nonce} {
		m.Write([]byte(s))
		m.Write([]byte{'\n'})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sign sets r's forwarding headers: from node from to node to, as key id
// keyID, at now.
func sign(key []byte, r *http.Request, keyID, from, to string, now time.Time) {
	var n [16]byte
	rand.Read(n[:])
	nonce := base64.RawURLEncoding.EncodeToString(n[:])
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	h := r.Header
	h.Set(HeaderKeyID, keyID)
	h.Set(HeaderFrom, from)
	h.Set(HeaderTo, to)
	h.Set(HeaderTime, ts)
	h.Set(HeaderNonce, nonce)
	h.Set(HeaderSignature, signature(key, r, keyID, from, to, ts, nonce))
}

// carries reports whether r has any forwarding header.
func carries(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, headerPrefix) {
			return true
		}
	}
	return false
}

// stripHeaders deletes every forwarding header of h.
func stripHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, headerPrefix) {
			delete(h, k)
		}
	}
}

// errForged is every refusal of a forwarding header: which check failed
// goes to the log only.
func errForged(detail string) error {
	return errdefs.Wrap(errdefs.ErrUnauthorized, "forward_unauthorized", errors.New(detail),
		"this request carries node-to-node headers (Hutch-Forward-*) without a valid signature")
}

// verify checks r's signature for node self under key at now, and that
// its nonce was not seen (seen records it).
func verify(key []byte, r *http.Request, self string, now time.Time, seen *nonces) (Hop, error) {
	h := r.Header
	keyID, from, to, ts, nonce, sig := h.Get(HeaderKeyID), h.Get(HeaderFrom), h.Get(HeaderTo), h.Get(HeaderTime), h.Get(HeaderNonce), h.Get(HeaderSignature)
	if len(key) == 0 {
		return Hop{}, errForged("this node has no cluster key")
	}
	if sig == "" || nonce == "" || ts == "" || from == "" {
		return Hop{}, errForged("missing signature")
	}
	want := signature(key, r, keyID, from, to, ts, nonce)
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return Hop{}, errForged("bad signature")
	}
	if to != self {
		return Hop{}, errForged("signed for another node")
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Hop{}, errForged("bad time")
	}
	if d := now.Sub(time.UnixMilli(ms)); d > Window || d < -Window {
		return Hop{}, errForged("outside the validity window")
	}
	if !seen.add(nonce, time.UnixMilli(ms).Add(Window), now) {
		return Hop{}, errForged("replayed")
	}
	return Hop{KeyID: keyID, From: from}, nil
}
