package ids

import (
	"testing"
	"time"
)

func TestNewIsValidAndOrdered(t *testing.T) {
	a := At(time.UnixMilli(1_700_000_000_000))
	b := At(time.UnixMilli(1_700_000_000_001))
	if !Valid(a) || !Valid(b) {
		t.Fatalf("invalid ids %q %q", a, b)
	}
	if !(a < b) {
		t.Fatalf("ids not ordered by time: %q >= %q", a, b)
	}
	if New() == New() {
		t.Fatal("two ids are equal")
	}
}

func TestValidRejects(t *testing.T) {
	for _, s := range []string{"", "abc", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "8zzzzzzzzzzzzzzzzzzzzzzzzz", "0000000000000000000000000u"} {
		if Valid(s) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
}

func TestTokenLength(t *testing.T) {
	if got := len(Token(32)); got != 52 {
		t.Fatalf("Token(32) has %d characters, want 52", got)
	}
}
