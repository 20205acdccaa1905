package history

import (
	"regexp"
	"strings"
	"testing"
)

// TestNamesMatchPatterns: isID and isKind accept exactly what the
// patterns they replace accepted.
func TestNamesMatchPatterns(t *testing.T) {
	idPattern := regexp.MustCompile(`^[0-9]{8}$`)
	kindPattern := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`)
	cases := []string{"", "0", "00000000", "12345678", "1234567", "123456789", "1234567a", "a2345678",
		"a", "z9", ".a", "_a", "-a", "a.b_c-d", "A", "aB", "a b", "é", "a\n", strings.Repeat("a", 32),
		strings.Repeat("a", 33), "9" + strings.Repeat("-", 31), "snapshot", "app.deploy"}
	for _, s := range cases {
		if got, want := isID(s), idPattern.MatchString(s); got != want {
			t.Errorf("isID(%q) = %v, want %v", s, got, want)
		}
		if got, want := isKind(s), kindPattern.MatchString(s); got != want {
			t.Errorf("isKind(%q) = %v, want %v", s, got, want)
		}
	}
}
