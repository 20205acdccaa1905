package gateway

import (
	"bytes"
	"testing"
)

// TestTokensKept: a token a server issued before keeps verifying with the
// same key (gateway.key outlives a restart and an upgrade).
func TestTokensKept(t *testing.T) {
	const id = "01jq3v9x7k2m4n6p8r0s2t4v6w"
	const tok = "hutch_sbx_" + id + ".MXNxwBd9bVx0OshCqegDRBeY9Zi5r8f4SjjT11P3C2I"
	ts := tokens{key: bytes.Repeat([]byte{7}, MinKeyBytes)}
	if got := ts.issue(id); got != tok {
		t.Errorf("issue = %s, want %s", got, tok)
	}
	if got, ok := ts.verify(tok); !ok || got != id {
		t.Errorf("verify = %s, %v", got, ok)
	}
}
