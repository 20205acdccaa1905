package agent

import (
	"strconv"
	"testing"
)

// TestNonceWindow: a nonce is refused while it is among the last
// replayWindow, forgotten after, and the cache never holds more.
func TestNonceWindow(t *testing.T) {
	c := newNonceCache()
	for i := range replayWindow + 10 {
		if !c.add(strconv.Itoa(i)) {
			t.Fatalf("nonce %d refused the first time", i)
		}
		if c.add(strconv.Itoa(i)) {
			t.Fatalf("nonce %d accepted twice in a row", i)
		}
	}
	if len(c.seen) != replayWindow || len(c.ring) != replayWindow {
		t.Fatalf("holds %d nonces in the map, %d in the ring; want %d", len(c.seen), len(c.ring), replayWindow)
	}
	for i := range 10 {
		if !c.add(strconv.Itoa(i)) {
			t.Fatalf("nonce %d, out of the window, refused", i)
		}
	}
	for i := 20; i < replayWindow+10; i += 97 {
		if c.add(strconv.Itoa(i)) {
			t.Fatalf("nonce %d, in the window, accepted again", i)
		}
	}
}
