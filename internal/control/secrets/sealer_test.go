package secrets

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
)

func newTestSealer(t *testing.T) *Sealer {
	t.Helper()
	key := make([]byte, KeySize)
	rand.Read(key)
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealRoundTrip(t *testing.T) {
	s := newTestSealer(t)
	for _, plain := range [][]byte{[]byte("sk-live-123"), {0}, bytes.Repeat([]byte("x"), 64<<10)} {
		nonce, ct, err := s.Seal("tenant-a", "API_KEY", plain)
		if err != nil {
			t.Fatal(err)
		}
		if len(nonce) != NonceSize || len(ct) != len(plain)+16 {
			t.Errorf("nonce %d bytes, ciphertext %d bytes for %d bytes; want %d and %d", len(nonce), len(ct), len(plain), NonceSize, len(plain)+16)
		}
		if len(plain) > 4 && bytes.Contains(ct, plain) {
			t.Error("the ciphertext holds the plaintext")
		}
		got, err := s.Open(s.KeyID(), "tenant-a", "API_KEY", nonce, ct)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("Open = %d bytes, %v; want the %d bytes sealed", len(got), err, len(plain))
		}
	}
}

func TestSealTwiceDiffers(t *testing.T) {
	s := newTestSealer(t)
	n1, c1, _ := s.Seal("t", "n", []byte("same value"))
	n2, c2, _ := s.Seal("t", "n", []byte("same value"))
	if bytes.Equal(n1, n2) || bytes.Equal(c1, c2) {
		t.Error("two seals of one value share a nonce or a ciphertext")
	}
}

func TestOpenRefusesTampering(t *testing.T) {
	s := newTestSealer(t)
	other := newTestSealer(t)
	const value = "the-recognisable-value"
	nonce, ct, err := s.Seal("tenant-a", "API_KEY", []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 1
		return c
	}
	tests := []struct {
		name                 string
		sealer               *Sealer
		keyID, tenant, label string
		nonce, ct            []byte
	}{
		{"ciphertext bit", s, s.KeyID(), "tenant-a", "API_KEY", nonce, flip(ct, 0)},
		{"tag bit", s, s.KeyID(), "tenant-a", "API_KEY", nonce, flip(ct, len(ct)-1)},
		{"truncated", s, s.KeyID(), "tenant-a", "API_KEY", nonce, ct[:len(ct)-1]},
		{"nonce bit", s, s.KeyID(), "tenant-a", "API_KEY", flip(nonce, 3), ct},
		{"short nonce", s, s.KeyID(), "tenant-a", "API_KEY", nonce[:8], ct},
		{"other tenant", s, s.KeyID(), "tenant-b", "API_KEY", nonce, ct},
		{"other name", s, s.KeyID(), "tenant-a", "API_KEY2", nonce, ct},
		{"shifted boundary", s, s.KeyID(), "tenant-aA", "PI_KEY", nonce, ct},
		{"other key", other, other.KeyID(), "tenant-a", "API_KEY", nonce, ct},
		{"stored key id differs", s, other.KeyID(), "tenant-a", "API_KEY", nonce, ct},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sealer.Open(tt.keyID, tt.tenant, tt.label, tt.nonce, tt.ct)
			if err == nil {
				t.Fatalf("opened %q", got)
			}
			if !errors.Is(err, ErrOpen) {
				t.Errorf("error %v is not ErrOpen", err)
			}
			if strings.Contains(err.Error(), value) {
				t.Errorf("error holds the value: %v", err)
			}
		})
	}
}

func TestNewSealerKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33} {
		if _, err := NewSealer(make([]byte, n)); err == nil {
			t.Errorf("NewSealer took a %d-byte key", n)
		}
	}
	a, _ := NewSealer(bytes.Repeat([]byte{1}, KeySize))
	b, _ := NewSealer(bytes.Repeat([]byte{1}, KeySize))
	c, _ := NewSealer(bytes.Repeat([]byte{2}, KeySize))
	if a.KeyID() != b.KeyID() || a.KeyID() == c.KeyID() || len(a.KeyID()) != 16 {
		t.Errorf("key ids %q %q %q: want equal for one key, different for another, 16 digits", a.KeyID(), b.KeyID(), c.KeyID())
	}
}
