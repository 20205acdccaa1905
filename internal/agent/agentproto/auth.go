// Package agentproto is the wire protocol between the control plane and
// hutch-agent that is not a /v1 type: the mutual HMAC authentication both
// sides compute (one implementation, imported by the agent and by
// internal/agentclient), the health answer and the agent's ready line.
// It links only the standard library and internal/confine, because
// hutch-agent links it.
package agentproto

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// Headers of the mutual authentication. Every request carries a fresh
// nonce and a MAC over it, its method and its path; every answer carries a
// proof over the same nonce. The token itself never crosses the socket.
const (
	HeaderNonce = "X-Hutch-Nonce"
	HeaderAuth  = "X-Hutch-Auth"
	HeaderProof = "X-Hutch-Proof"
)

// NonceLen is the length of a nonce in bytes; on the wire it is hex.
const NonceLen = 16

// NewNonce returns NonceLen random bytes, hex encoded.
func NewNonce() string {
	var b [NonceLen]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b[:])
}

// ValidNonce reports whether s has the shape NewNonce gives: 2*NonceLen
// lower-case hex digits.
func ValidNonce(s string) bool {
	if len(s) != 2*NonceLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// RequestMAC is what the control plane sends in HeaderAuth:
// hex(HMAC-SHA256(token, "cp\n"+nonce+"\n"+method+" "+path)), where path is
// the URL path without its query.
func RequestMAC(token, nonce, method, path string) string {
	return mac(token, "cp\n"+nonce+"\n"+method+" "+path)
}

// Proof is what the agent sends in HeaderProof on every answer:
// hex(HMAC-SHA256(token, "agent\n"+nonce)).
func Proof(token, nonce string) string {
	return mac(token, "agent\n"+nonce)
}

// Equal compares two MACs in constant time.
func Equal(got, want string) bool {
	return hmac.Equal([]byte(got), []byte(want))
}

func mac(token, msg string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}
