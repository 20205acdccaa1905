package envelope

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// A warm agent (Envelope.AwaitBootstrap) is handed its sandbox's envelope
// over the network, so the envelope travels sealed: AES-256-GCM under a
// key derived from the warm agent's own token, which reached it through
// its Pod's Secret and never crosses the network. Whoever sees the
// request learns nothing of the sandbox's token, and cannot forge one.

// sealContext keeps the sealing key apart from the token's other uses.
const sealContext = "hutch-agent bootstrap envelope\x00"

func sealKey(token string) cipher.AEAD {
	k := sha256.Sum256([]byte(sealContext + token))
	block, _ := aes.NewCipher(k[:]) // a 32-byte key never fails
	aead, _ := cipher.NewGCM(block)
	return aead
}

// Seal frames e (as Encode does) and encrypts it for the agent holding
// token: a random nonce, then the ciphertext.
func Seal(e *Envelope, token string) ([]byte, error) {
	var framed bytes.Buffer
	if err := Encode(&framed, e); err != nil {
		return nil, err
	}
	aead := sealKey(token)
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+framed.Len()+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, framed.Bytes(), nil), nil
}

// Open decrypts what Seal made for token and decodes and validates the
// envelope in it.
func Open(sealed []byte, token string) (*Envelope, error) {
	aead := sealKey(token)
	if len(sealed) < aead.NonceSize()+aead.Overhead() || len(sealed) > MaxSize+64 {
		return nil, errors.New("sealed envelope: wrong size")
	}
	framed, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], nil)
	if err != nil {
		return nil, fmt.Errorf("sealed envelope: %w", err)
	}
	return Decode(bytes.NewReader(framed))
}
