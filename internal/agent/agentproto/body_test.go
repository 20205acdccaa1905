package agentproto

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestBodyFraming(t *testing.T) {
	const token, nonce = "tok-0123456789abcdef0123456789abcdef", "00112233445566778899aabbccddeeff"
	data := strings.Repeat("0123456789", 10_000) // several chunks
	framed, err := io.ReadAll(FrameBody(iotest.HalfReader(strings.NewReader(data)), token, nonce))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(UnframeBody(iotest.OneByteReader(bytes.NewReader(framed)), token, nonce))
	if err != nil || string(got) != data {
		t.Fatalf("round trip: %d bytes, %v", len(got), err)
	}
	empty, _ := io.ReadAll(FrameBody(strings.NewReader(""), token, nonce))
	if got, err := io.ReadAll(UnframeBody(bytes.NewReader(empty), token, nonce)); err != nil || len(got) != 0 {
		t.Fatalf("empty body: %q, %v", got, err)
	}
	flipped := bytes.Clone(framed)
	flipped[10] ^= 1
	for _, c := range []struct {
		name  string
		body  []byte
		nonce string
		want  error
	}{
		{"data changed", flipped, nonce, ErrBodyMismatch},
		{"another nonce", framed, "ffeeddccbbaa99887766554433221100", ErrBodyMismatch},
		{"cut before the MAC", framed[:len(framed)-40], nonce, io.ErrUnexpectedEOF},
		{"cut inside the MAC", framed[:len(framed)-5], nonce, io.ErrUnexpectedEOF},
	} {
		if _, err := io.ReadAll(UnframeBody(bytes.NewReader(c.body), token, c.nonce)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
