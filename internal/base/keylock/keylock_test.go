package keylock

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestSerialises: holders of one key never overlap, other keys do not
// wait for it, and no lock is kept once everyone has left.
func TestSerialises(t *testing.T) {
	var m Map
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			unlock := m.Lock("a")
			defer unlock()
			n := inside.Add(1)
			for {
				old := most.Load()
				if n <= old || most.CompareAndSwap(old, n) {
					break
				}
			}
			inside.Add(-1)
		})
	}
	unlockB := m.Lock("b") // another key is free while "a" is busy
	wg.Wait()
	unlockB()
	unlockB() // a second unlock is harmless
	if most.Load() != 1 {
		t.Fatalf("%d holders of one key at once; want 1", most.Load())
	}
	if m.Len() != 0 {
		t.Fatalf("%d locks kept after every holder left", m.Len())
	}
}
