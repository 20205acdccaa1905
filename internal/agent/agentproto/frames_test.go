package agentproto

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestFrameReaderRecycle: a large payload is read into a buffer handed
// back by Recycle, and only into one handed back: a payload the caller
// still holds is never overwritten by a later frame.
func TestFrameReaderRecycle(t *testing.T) {
	big := func(c byte) []byte { return bytes.Repeat([]byte{c}, recycleMin) }
	var wire []byte
	for _, c := range []byte("abcd") {
		wire = AppendFrame(wire, FrameStdout, 0, big(c))
	}
	wire = AppendFrame(wire, FrameStdout, 0, []byte("small"))
	wire = AppendFrame(wire, FrameStdout, 0, big('e'))
	fr := NewFrameReader(bytes.NewReader(wire))
	next := func() []byte {
		t.Helper()
		f, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		return f.Payload
	}

	a, b := next(), next()
	if &a[0] == &b[0] {
		t.Fatal("a payload not handed back was read into")
	}
	fr.Recycle(a)
	c := next()
	if &c[0] != &a[0] {
		t.Error("the recycled buffer was not reused for the next large frame")
	}
	if !bytes.Equal(b, big('b')) || !bytes.Equal(c, big('c')) {
		t.Error("payloads differ from what was sent")
	}
	d := next()
	if &d[0] == &c[0] || &d[0] == &b[0] {
		t.Error("a payload the caller holds was reused")
	}

	fr.Recycle(make([]byte, 16)) // too small to keep
	if s := next(); string(s) != "small" {
		t.Errorf("small frame = %q", s)
	}
	fr.Recycle(make([]byte, recycleMin/2, recycleMin-1)) // too small for what comes
	if e := next(); !bytes.Equal(e, big('e')) {
		t.Error("a frame larger than the recycled buffer was not read whole")
	}
	if _, err := fr.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}
