// Package agentproto is the wire protocol between the control plane and
// hutch-agent that is not a /v1 type: the mutual HMAC authentication both
// sides compute (one implementation, imported by the agent and by
// internal/agent/agentclient), the health answer and the agent's ready line.
// It links only the standard library and internal/agent/confine, because
// hutch-agent links it.
package agentproto

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// Headers of the mutual authentication. Every request carries a fresh
// nonce and a MAC over it and the request (RequestMAC); every answer
// carries a proof over the same nonce. The token itself never crosses the
// socket.
//
// In protocol 2 the MAC covers the method, the path, the raw query and
// HeaderBody: the hex SHA-256 of the body when the client knows the body
// before it sends it (JSON requests, and no body: EmptyBody), or
// BodyFramed for a streamed body (file and tar uploads), which then comes
// in chunks with its MAC at its end (body.go), checked before the agent
// commits what it read.
const (
	HeaderNonce = "X-Hutch-Nonce"
	HeaderAuth  = "X-Hutch-Auth"
	HeaderProof = "X-Hutch-Proof"
	HeaderBody  = "X-Hutch-Body"
)

// BodyFramed is the value of HeaderBody of a framed body.
const BodyFramed = "framed"

// EmptyBody is HeaderBody of a request without a body: the SHA-256 of
// nothing.
const EmptyBody = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

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

// RequestMAC is what a control plane of protocol 2 sends in HeaderAuth:
// hex(HMAC-SHA256(token, "cp2\n"+nonce+"\n"+method+"\n"+path+"\n"+
// rawQuery+"\n"+body)), where path is the URL's path, rawQuery its query
// exactly as sent, and body the request's HeaderBody.
func RequestMAC(token, nonce, method, path, rawQuery, body string) string {
	return mac(token, "cp2\n"+nonce+"\n"+method+"\n"+path+"\n"+rawQuery+"\n"+body)
}

// RequestMACv1 is protocol 1's MAC, over method and path only:
// hex(HMAC-SHA256(token, "cp\n"+nonce+"\n"+method+" "+path)). An agent
// accepts it only from a control plane of protocol 1 (its envelope says
// so), and the control plane sends it only to an agent of protocol 1.
func RequestMACv1(token, nonce, method, path string) string {
	return mac(token, "cp\n"+nonce+"\n"+method+" "+path)
}

// BodyMAC ends a framed body, as 32 raw bytes:
// hex(HMAC-SHA256(token, "body\n"+nonce+"\n"+sum)), sum the body's hex
// SHA-256.
func BodyMAC(token, nonce, sum string) string {
	return mac(token, "body\n"+nonce+"\n"+sum)
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
