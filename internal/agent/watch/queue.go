package watch

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

// watchQueue holds a watch's events between the inotify reader and the
// stream. It never blocks the reader and never grows past its bound:
//
//   - Each event waits window before it may be taken, and while it waits a
//     write of the same path is dropped into it (a write into a waiting
//     create or write), as is a create repeated over a waiting create
//     (a new directory's scan and the kernel both saw the file). Distinct
//     paths keep their order.
//   - When limit events wait, the next one is replaced by a single overflow
//     event and everything after it is dropped until that overflow event
//     has been taken; the stream says "lost" once instead of blocking or
//     growing.
type watchQueue struct {
	limit  int
	window time.Duration
	ready  chan struct{} // one token: something was added or the queue closed

	mu     sync.Mutex
	items  []queuedEvent // waiting, oldest first; items[off:] are live
	off    int
	seq    uint64            // sequence number of items[off]
	last   map[string]uint64 // path → sequence of its last waiting event
	lost   bool              // an overflow event waits; drop the rest
	closed bool
}

type queuedEvent struct {
	ev agentproto.WatchEvent
	at time.Time // when it was queued, with the monotonic clock
}

func newWatchQueue(limit int, window time.Duration) *watchQueue {
	return &watchQueue{
		limit:  limit,
		window: window,
		ready:  make(chan struct{}, 1),
		last:   make(map[string]uint64),
	}
}

// push queues ev, coalescing it into a waiting event of its path when it
// can, or turns it into the overflow event when the queue is full.
func (q *watchQueue) push(ev agentproto.WatchEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.lost {
		return
	}
	if s, ok := q.last[ev.Path]; ok {
		prev := q.items[q.off+int(s-q.seq)].ev.Type
		switch {
		case ev.Type == agentproto.WatchWrite && (prev == agentproto.WatchCreate || prev == agentproto.WatchWrite):
			return
		case ev.Type == agentproto.WatchCreate && prev == agentproto.WatchCreate:
			return
		}
	}
	if len(q.items)-q.off >= q.limit {
		q.overflowLocked()
		return
	}
	if ev.Type == agentproto.WatchRename || (ev.IsDir && ev.Type == agentproto.WatchRemove) {
		// The paths below the directory changed meaning: coalescing starts
		// afresh rather than track every one of them.
		clear(q.last)
	}
	s := q.seq + uint64(len(q.items)-q.off)
	q.items = append(q.items, queuedEvent{ev: ev, at: time.Now()})
	q.last[ev.Path] = s
	if ev.OldPath != "" {
		q.last[ev.OldPath] = s
	}
	q.signal()
}

// overflow queues the overflow event that says events were lost, unless
// one waits already.
func (q *watchQueue) overflow() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed && !q.lost {
		q.overflowLocked()
	}
}

func (q *watchQueue) overflowLocked() {
	q.items = append(q.items, queuedEvent{ev: agentproto.WatchEvent{Type: agentproto.WatchOverflow, Time: watchTime()}, at: time.Now()})
	q.lost = true
	clear(q.last)
	q.signal()
}

// close ends the queue: what waits is taken at once, then take says
// io.EOF.
func (q *watchQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *watchQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take waits for events that have waited their window and returns them,
// oldest first; io.EOF once the queue is closed and empty, or ctx's error.
func (q *watchQueue) take(ctx context.Context) ([]agentproto.WatchEvent, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		evs, wait, err := q.ripe()
		if len(evs) > 0 || err != nil {
			return evs, err
		}
		var fire <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-q.ready:
		case <-fire:
		}
	}
}

// ripe removes and returns the events whose window has passed (all of
// them once closed); with none, how long until the oldest ripens (zero:
// the queue is empty).
func (q *watchQueue) ripe() ([]agentproto.WatchEvent, time.Duration, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	live := q.items[q.off:]
	if len(live) == 0 {
		if q.closed {
			return nil, 0, io.EOF
		}
		return nil, 0, nil
	}
	cut := time.Now().Add(-q.window)
	n := 0
	for n < len(live) && (q.closed || !live[n].at.After(cut)) {
		n++
	}
	if n == 0 {
		return nil, live[0].at.Sub(cut), nil
	}
	evs := make([]agentproto.WatchEvent, n)
	for i, it := range live[:n] {
		evs[i] = it.ev
		s := q.seq + uint64(i)
		if q.last[it.ev.Path] == s {
			delete(q.last, it.ev.Path)
		}
		if it.ev.OldPath != "" && q.last[it.ev.OldPath] == s {
			delete(q.last, it.ev.OldPath)
		}
		if it.ev.Type == agentproto.WatchOverflow && it.ev.Path == "" {
			q.lost = false
		}
	}
	clear(live[:n])
	q.off += n
	q.seq += uint64(n)
	if q.off == len(q.items) {
		q.items, q.off = q.items[:0], 0
	} else if q.off > len(q.items)/2 {
		q.items = append(q.items[:0], q.items[q.off:]...)
		q.off = 0
	}
	return evs, 0, nil
}

// watchTime is an event's time.
func watchTime() time.Time { return time.Now().UTC() }
