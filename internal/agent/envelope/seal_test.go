package envelope

import (
	"bytes"
	"strings"
	"testing"
)

// TestSeal: a sealed envelope opens with its agent's token only, and
// shows nothing of the sandbox's token.
func TestSeal(t *testing.T) {
	e := &Envelope{Version: Version, SandboxID: "sb", Token: strings.Repeat("s", 40), Listen: ":1", Root: "/", Workdir: "/", MaxFileBytes: 1}
	warm := strings.Repeat("w", 40)
	sealed, err := Seal(e, warm)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(e.Token)) {
		t.Fatal("the sealed envelope shows the sandbox's token")
	}
	got, err := Open(sealed, warm)
	if err != nil || got.Token != e.Token || got.SandboxID != "sb" {
		t.Fatalf("Open = %+v, %v", got, err)
	}
	if _, err := Open(sealed, strings.Repeat("x", 40)); err == nil {
		t.Error("another token opened the envelope")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := Open(sealed, warm); err == nil {
		t.Error("a changed envelope opened")
	}
}
