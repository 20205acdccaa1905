package templates

import (
	"context"
	"sync"
)

// keyLock lets one holder at a time have each key, and bounds each wait
// for one by a context.
type keyLock struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when its key is unlocked
}

func newKeyLock() *keyLock { return &keyLock{held: map[string]chan struct{}{}} }

// lock waits until key is free or ctx ends, and returns its unlock.
func (k *keyLock) lock(ctx context.Context, key string) (func(), error) {
	for {
		k.mu.Lock()
		wait, busy := k.held[key]
		if !busy {
			done := make(chan struct{})
			k.held[key] = done
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.held, key)
				k.mu.Unlock()
				close(done)
			}, nil
		}
		k.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}
