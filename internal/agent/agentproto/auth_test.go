package agentproto

import "testing"

// The vectors were computed independently (Python's hmac module).
func TestMACVectors(t *testing.T) {
	const token, nonce = "tok-0123456789abcdef0123456789abcdef", "00112233445566778899aabbccddeeff"
	if got, want := RequestMACv1(token, nonce, "GET", "/health"), "a4124ac2e0eb596c8117fd2e12ddbd508c466d909a377ec5ecf4503448a3f7ea"; got != want {
		t.Errorf("RequestMACv1 = %s, want %s", got, want)
	}
	if got, want := RequestMAC(token, nonce, "GET", "/files", "path=a%2Fb", EmptyBody), "4bcb4c84895d497a0d3db27f3e3043386c504b0a8e9f4329894550aeabf420f3"; got != want {
		t.Errorf("RequestMAC = %s, want %s", got, want)
	}
	if got, want := BodyMAC(token, nonce, EmptyBody), "6bc84f0e6efcbc49fbb49f6642c67b05f450c284886b462ae0ce0a2c62079283"; got != want {
		t.Errorf("BodyMAC = %s, want %s", got, want)
	}
	if got, want := Proof(token, nonce), "a0f0d2281ba2592f7d4da168600f82f213e0af8c582b2436ccbd0ec2d14d3c22"; got != want {
		t.Errorf("Proof = %s, want %s", got, want)
	}
	if !Equal(Proof(token, nonce), Proof(token, nonce)) || Equal(Proof(token, nonce), Proof(token+"x", nonce)) {
		t.Error("Equal disagrees with ==")
	}
}

func TestNonce(t *testing.T) {
	a, b := NewNonce(), NewNonce()
	if !ValidNonce(a) || !ValidNonce(b) || a == b {
		t.Errorf("NewNonce gave %q and %q", a, b)
	}
	for _, bad := range []string{"", "abc", "00112233445566778899AABBCCDDEEFF", "00112233445566778899aabbccddeefg", a + "0"} {
		if ValidNonce(bad) {
			t.Errorf("ValidNonce(%q) = true", bad)
		}
	}
}
