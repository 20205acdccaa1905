package namespace

import (
	"maps"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
	"github.com/hutchdev/hutch/internal/runtime/host/hostids"
)

// The reaper gives the uid ranges of torn-down sandboxes back to the pool.
// A range goes back only once no process runs as any of its ids, wherever
// it runs (a setuid file of the sandbox's that got out, say), which takes
// a walk of /proc: one read per host process, thousands on a full host.
// Teardown does not walk: it retires the range, which stays registered
// (out of every pool's reach) until the reaper's next walk, and one walk
// serves every range retired since the last. A destroy then costs no
// walk of its own however many sandboxes run, and a burst of destroys
// costs one walk per reapEvery.
//
// The reaper's goroutine runs only while ranges wait; close walks until
// none does (or teardownTimeout passes) and waits for it. A range still
// registered when the server stops is found by the next start's sweep
// (hostids.Pool.Stale) and retired again.

// reapEvery is how long retired ranges gather before a walk.
const reapEvery = 100 * time.Millisecond

type reaper struct {
	ids *hostids.Pool

	walking sync.Mutex // one walk at a time: a range is released once

	mu      sync.Mutex
	pending map[uint32]bool // first ids of the retired ranges
	running bool            // the goroutine runs
	closing chan struct{}   // closed by close
	closed  bool
	wg      sync.WaitGroup
}

func newReaper(ids *hostids.Pool) *reaper {
	return &reaper{ids: ids, pending: map[uint32]bool{}, closing: make(chan struct{})}
}

// retire hands the range at first over to the reaper.
func (r *reaper) retire(first uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[first] = true
	if !r.running {
		r.running = true
		r.wg.Go(r.run)
	}
}

// run walks, every reapEvery (at once once closing), until no range waits.
func (r *reaper) run() {
	var deadline time.Time // set once closing
	wait := reapEvery
	for {
		select {
		case <-time.After(wait):
		case <-r.closing:
			if deadline.IsZero() {
				deadline = time.Now().Add(hostproc.TeardownTimeout)
			}
			time.Sleep(5 * time.Millisecond) // processes just killed are going
		}
		left := r.walk()
		r.mu.Lock()
		if len(r.pending) == 0 || (!deadline.IsZero() && time.Now().After(deadline)) {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		// Processes were killed, or /proc could not be read: walk again
		// soon, as hostproc.KillAll does.
		wait = 5 * time.Millisecond
		if left == 0 {
			wait = reapEvery // retired while this walk ran
		}
	}
}

// walk kills every process running as an id of a range retired before it
// began and, when it found none, releases those ranges; it returns the
// number of processes it killed (1 when /proc could not be read).
func (r *reaper) walk() int {
	r.walking.Lock()
	defer r.walking.Unlock()
	r.mu.Lock()
	batch := maps.Clone(r.pending)
	r.mu.Unlock()
	inBatch := func(u uint32) bool { return u >= idBase && batch[idBase+(u-idBase)/idSize*idSize] }
	n, err := hostproc.KillMatching(func(p hostproc.Proc) bool { return p.HasUID(inBatch) })
	if err != nil {
		return 1
	}
	if n > 0 {
		return n
	}
	r.mu.Lock()
	for first := range batch {
		delete(r.pending, first)
		r.ids.Release(first)
	}
	r.mu.Unlock()
	return 0
}

// flush walks until no retired range waits, or teardownTimeout passes:
// for a sweep, after which nothing is registered to a sandbox that is
// gone (a restart finds the ranges its crash left retired).
func (r *reaper) flush() {
	deadline := time.Now().Add(hostproc.TeardownTimeout)
	for r.walk() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// close reaps what is retired and waits for the reaper's goroutine.
func (r *reaper) close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.closing)
	}
	r.mu.Unlock()
	r.wg.Wait()
}
