package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Intervals of a phase's ticker: how often it prints, and how long one
// call may go unanswered before it says the phase has stalled.
const (
	tickEvery  = 2 * time.Second
	stallAfter = 10 * time.Second
)

// ticker prints a long phase's progress as it goes (done of total, the
// rate since the last line, failures, host MemAvailable) and, when one
// call has waited stallAfter, which call and for how long, so a run that
// slows down or stops says where. It owns one goroutine, ended by
// finish.
type ticker struct {
	w     io.Writer
	phase string
	total int

	done, failed atomic.Int64
	waiting      atomic.Int64 // unix nanoseconds the call in flight began; 0 when none
	holding      atomic.Bool  // the phase is paused (hold)
	held         atomic.Int64 // nanoseconds the phase has been paused in all

	stop chan struct{}
	wg   sync.WaitGroup
}

// startTicker starts printing the progress of phase, total calls, to w.
func startTicker(w io.Writer, phase string, total int) *ticker {
	t := &ticker{w: w, phase: phase, total: total, stop: make(chan struct{})}
	t.wg.Add(1)
	go t.run()
	return t
}

// call times one call of the phase, counting it done, or failed when it
// returns an error.
func (t *ticker) call(fn func() error) error {
	t.waiting.Store(time.Now().UnixNano())
	err := fn()
	t.waiting.Store(0)
	t.done.Add(1)
	if err != nil {
		t.failed.Add(1)
	}
	return err
}

// hold pauses the phase while fn runs (a probe of the fleet between two
// of its calls): the ticker prints nothing meanwhile, and the next rate
// leaves the pause out.
func (t *ticker) hold(fn func()) {
	t.holding.Store(true)
	start := time.Now()
	fn()
	t.held.Add(int64(time.Since(start)))
	t.holding.Store(false)
}

// finish stops the ticker and prints the phase's last line.
func (t *ticker) finish() {
	close(t.stop)
	t.wg.Wait()
	fmt.Fprintf(t.w, "lifecycle: %s: %d of %d done, %d failed\n", t.phase, t.done.Load(), t.total, t.failed.Load())
}

func (t *ticker) run() {
	defer t.wg.Done()
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	last, lastAt, lastHeld := int64(0), time.Now(), int64(0)
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			if t.holding.Load() {
				continue
			}
			done, held := t.done.Load(), t.held.Load()
			active := now.Sub(lastAt) - time.Duration(held-lastHeld)
			if active <= 0 {
				continue
			}
			rate := float64(done-last) / active.Seconds()
			last, lastAt, lastHeld = done, now, held
			mem := "?"
			if avail, err := memAvailable(); err == nil {
				mem = fmt.Sprintf("%d MiB", avail>>20)
			}
			fmt.Fprintf(t.w, "lifecycle: %s: %d of %d, %.1f/s, %d failed, host MemAvailable %s\n",
				t.phase, done, t.total, rate, t.failed.Load(), mem)
			if began := t.waiting.Load(); began != 0 {
				if waited := now.Sub(time.Unix(0, began)); waited >= stallAfter {
					fmt.Fprintf(t.w, "lifecycle: %s: stalled: call %d has waited %s for an answer\n",
						t.phase, done+1, waited.Truncate(time.Second))
				}
			}
		}
	}
}
