package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeySize is the master key's length: AES-256.
const KeySize = 32

// NonceSize is the length of the random nonce drawn for every value.
const NonceSize = 12

// aadLabel starts the additional data of every sealed value; a new scheme
// gets a new label.
const aadLabel = "hutch/secret/v1"

// Sealer encrypts and decrypts secret values with one master key:
// AES-256-GCM, a fresh random 12-byte nonce per value, and additional data
// binding each ciphertext to its tenant and name, so a ciphertext copied
// into another row or tenant fails to open. It keeps the cipher, not the
// key's bytes, and is safe for concurrent use.
//
// KeyID names the key without revealing it; the store keeps it beside each
// value. Rotation, later, is a set of Sealers by KeyID: open with the
// row's, seal with the newest.
type Sealer struct {
	aead cipher.AEAD
	id   string
}

// NewSealer returns a Sealer for a KeySize-byte key. It does not keep key:
// the caller should clear it.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("the secrets master key must be %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block) // the standard 12-byte nonce
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, id: keyID(key)}, nil
}

// keyID is a public fingerprint of key: 16 hex digits of an HMAC of a
// fixed label under it.
func keyID(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("hutch secrets key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// KeyID names the Sealer's key.
func (s *Sealer) KeyID() string { return s.id }

// Seal encrypts plaintext for the secret name of tenantID under a new
// random nonce. The ciphertext carries GCM's 16-byte tag.
func (s *Sealer) Seal(tenantID, name string, plaintext []byte) (nonce, ciphertext []byte, err error) {
	nonce = make([]byte, NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, fmt.Errorf("draw a nonce: %w", err)
	}
	return nonce, s.aead.Seal(nil, nonce, plaintext, additionalData(tenantID, name)), nil
}

// ErrOpen is found (errors.Is) in the error of a value that does not open:
// a different key, an altered ciphertext or nonce, or a ciphertext that
// belongs to another tenant or name.
var ErrOpen = errors.New("secret value does not open")

// Open decrypts what Seal returned for the same tenant and name; keyID is
// the ID stored with it. Its errors never hold the value.
func (s *Sealer) Open(keyID, tenantID, name string, nonce, ciphertext []byte) ([]byte, error) {
	if keyID != s.id {
		return nil, fmt.Errorf("%w: it was sealed with master key %s, and the server's key is %s", ErrOpen, keyID, s.id)
	}
	if len(nonce) != NonceSize {
		return nil, fmt.Errorf("%w: its nonce is %d bytes, not %d", ErrOpen, len(nonce), NonceSize)
	}
	b, err := s.aead.Open(nil, nonce, ciphertext, additionalData(tenantID, name))
	if err != nil {
		return nil, fmt.Errorf("%w: it was altered or belongs to another tenant or name", ErrOpen)
	}
	return b, nil
}

// additionalData binds a value to its tenant and name: the label, then each
// part with its length before it, so no two (tenant, name) pairs share
// additional data.
func additionalData(tenantID, name string) []byte {
	b := make([]byte, 0, len(aadLabel)+len(tenantID)+len(name)+2*binary.MaxVarintLen64)
	b = append(b, aadLabel...)
	for _, part := range []string{tenantID, name} {
		b = binary.AppendUvarint(b, uint64(len(part)))
		b = append(b, part...)
	}
	return b
}
