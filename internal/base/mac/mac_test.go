package mac

import (
	"bytes"
	"testing"
	"time"
)

// TestSum pins the MAC: tokens signed before a change verify after it.
func TestSum(t *testing.T) {
	k := Key(bytes.Repeat([]byte{7}, 32))
	const want = "MXNxwBd9bVx0OshCqegDRBeY9Zi5r8f4SjjT11P3C2I"
	if got := k.Sum("hutch-provider-token", "01jq3v9x7k2m4n6p8r0s2t4v6w"); got != want {
		t.Fatalf("Sum = %s, want %s", got, want)
	}
	if !k.Verify(want, "hutch-provider-token", "01jq3v9x7k2m4n6p8r0s2t4v6w") {
		t.Fatal("Verify refused its own Sum")
	}
	for name, ok := range map[string]bool{
		"another purpose":     k.Verify(want, "hutch-e2b-envd", "01jq3v9x7k2m4n6p8r0s2t4v6w"),
		"another field":       k.Verify(want, "hutch-provider-token", "01jq3v9x7k2m4n6p8r0s2t4v6x"),
		"a field split":       k.Verify(k.Sum("p", "a", "b"), "p", "a\nb", ""),
		"fields run together": k.Verify(k.Sum("p", "ab"), "p", "a", "b"),
		"another key":         Key(bytes.Repeat([]byte{8}, 32)).Verify(want, "hutch-provider-token", "01jq3v9x7k2m4n6p8r0s2t4v6w"),
		"a prefix":            k.Verify(want[:len(want)-1], "hutch-provider-token", "01jq3v9x7k2m4n6p8r0s2t4v6w"),
	} {
		if ok {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestExpiry(t *testing.T) {
	at := time.Unix(1_900_003_600, 0)
	if s := FormatExpiry(at.Add(999 * time.Millisecond)); s != "1900003600" {
		t.Fatalf("FormatExpiry = %s", s)
	}
	if got, ok := ParseExpiry("1900003600"); !ok || !got.Equal(at) {
		t.Fatalf("ParseExpiry = %v, %v", got, ok)
	}
	for _, s := range []string{"", "0", "01900003600", "-5", "+1900003600", " 1900003600", "1900003600 ", "19000036OO", "1e9", "1000000000000"} {
		if _, ok := ParseExpiry(s); ok {
			t.Errorf("ParseExpiry(%q) accepted", s)
		}
	}
	if Expired(at, at.Add(-time.Nanosecond)) || !Expired(at, at) || !Expired(at, at.Add(time.Second)) {
		t.Error("a token is good before its expiry, not at or after it")
	}
}
