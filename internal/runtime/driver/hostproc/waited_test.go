package hostproc

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaited: a process with more busy threads than the host has CPUs
// has waited for one, while they run.
func TestWaited(t *testing.T) {
	busy := 2*runtime.NumCPU() + 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(busy + 1))
	before, err := Waited(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var (
		done atomic.Bool
		wg   sync.WaitGroup
	)
	for range busy {
		wg.Go(func() {
			runtime.LockOSThread() // a thread of its own, which the kernel schedules
			defer runtime.UnlockOSThread()
			for !done.Load() {
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	after, err := Waited(os.Getpid()) // before the busy threads end
	done.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 10*time.Millisecond {
		t.Fatalf("Waited went from %s to %s with %d busy threads on %d CPUs", before, after, busy, runtime.NumCPU())
	}
	if _, err := Waited(1 << 30); err == nil {
		t.Fatal("Waited of a pid that does not exist did not fail")
	}
}
