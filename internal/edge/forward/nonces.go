package forward

import (
	"sync"
	"time"
)

// maxNonces bounds the replay cache: past it, a request is refused until
// entries expire (a node signs far fewer in Window than this).
const maxNonces = 1 << 20

// nonces are the forwarded requests' nonces seen within Window, each
// kept until its request's time leaves the window: one seen again is a
// replay.
type nonces struct {
	mu    sync.Mutex
	until map[string]time.Time
	swept time.Time
}

// add records nonce, valid until until, and reports whether it was new
// (false also when the cache is full).
func (n *nonces) add(nonce string, until, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.until == nil {
		n.until = map[string]time.Time{}
	}
	if now.Sub(n.swept) > Window/2 || len(n.until) >= maxNonces {
		for k, u := range n.until {
			if now.After(u) {
				delete(n.until, k)
			}
		}
		n.swept = now
	}
	if _, ok := n.until[nonce]; ok || len(n.until) >= maxNonces {
		return false
	}
	n.until[nonce] = until
	return true
}
