package auth

import (
	"crypto/sha256"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

var keyRE = regexp.MustCompile(`^hk_[0-9a-hjkmnp-tv-z]{12}_[0-9a-hjkmnp-tv-z]{52}$`)

func TestNewKey(t *testing.T) {
	k, full := NewKey("tenant1", "ci", api.RoleMember)
	if !keyRE.MatchString(full) {
		t.Fatalf("key %q does not match %s", full, keyRE)
	}
	id, secret, err := ParseKey(full)
	if err != nil {
		t.Fatalf("ParseKey(NewKey()): %v", err)
	}
	if id != k.ID || k.Prefix != "hk_"+id || !strings.HasPrefix(full, k.Prefix+"_") {
		t.Errorf("id %q, record %+v: id and prefix disagree with the key", id, k)
	}
	sum := sha256.Sum256([]byte(secret))
	if string(k.Hash) != string(sum[:]) {
		t.Error("Hash is not SHA-256 of the secret")
	}
	if strings.Contains(string(k.Hash), secret) || k.TenantID != "tenant1" || k.Name != "ci" || k.Role != api.RoleMember {
		t.Errorf("record %+v", k)
	}
	if k.CreatedAt.IsZero() || k.CreatedAt.Location() != time.UTC || time.Since(k.CreatedAt) > time.Minute {
		t.Errorf("CreatedAt = %v, want now in UTC", k.CreatedAt)
	}
	k2, full2 := NewKey("tenant1", "ci", api.RoleMember)
	if k2.ID == k.ID || full2 == full {
		t.Error("two keys are equal")
	}
}

func TestParseKeyRejects(t *testing.T) {
	_, good := NewKey("t", "n", api.RoleMember)
	id, secret, _ := ParseKey(good)
	for name, key := range map[string]string{
		"empty":           "",
		"no prefix":       strings.TrimPrefix(good, "hk_"),
		"other prefix":    "sk_" + id + "_" + secret,
		"upper case":      strings.ToUpper(good),
		"short id":        "hk_" + id[:11] + "_" + secret,
		"long id":         "hk_" + id + "a_" + secret,
		"no secret":       "hk_" + id + "_",
		"no separator":    "hk_" + id + secret,
		"short secret":    "hk_" + id + "_" + secret[:15],
		"huge secret":     "hk_" + id + "_" + strings.Repeat("a", 129),
		"bad char":        "hk_" + id + "_" + secret[:51] + "u",
		"extra separator": good + "_x",
		"space":           good + " ",
	} {
		if _, _, err := ParseKey(key); !errors.Is(err, errdefs.ErrUnauthorized) {
			t.Errorf("ParseKey(%s %q) = %v, want unauthorized", name, key, err)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	_, good := NewKey("t", "n", api.RoleMember)
	f.Add(good)
	f.Add("hk_")
	f.Add("hk_0123456789ab_")
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, err := ParseKey(s)
		if err != nil {
			if !errors.Is(err, errdefs.ErrUnauthorized) {
				t.Fatalf("ParseKey(%q): %v is not unauthorized", s, err)
			}
			return
		}
		if s != "hk_"+id+"_"+secret {
			t.Fatalf("ParseKey(%q) = %q, %q: does not rebuild the key", s, id, secret)
		}
	})
}
