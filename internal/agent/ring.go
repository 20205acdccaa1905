package agent

import (
	"bytes"
	"sync"

	"github.com/hutchdev/hutch/api"
)

// outRing keeps the most recent output of a process, at most limit bytes,
// numbered by offset from the process's first byte. Writers never wait:
// when the ring is full the oldest chunks go, and a reader whose cursor
// points before what is left is told how many bytes it missed.
type outRing struct {
	mu     sync.Mutex
	chunks []outChunk // oldest first
	start  int64      // offset of chunks[0]
	end    int64      // offset after the last byte written
	held   int64      // bytes in chunks
	limit  int64
	closed bool
	wake   chan struct{} // closed and replaced on every change
}

type outChunk struct {
	stream string
	off    int64
	data   []byte
}

func newOutRing(limit int64) *outRing {
	return &outRing{limit: limit, wake: make(chan struct{})}
}

// write appends p (copied) as output of stream.
func (r *outRing) write(stream string, p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := outChunk{stream: stream, off: r.end, data: bytes.Clone(p)}
	r.end += int64(len(p))
	if int64(len(c.data)) > r.limit { // keep only what fits
		cut := int64(len(c.data)) - r.limit
		c.data, c.off = c.data[cut:], c.off+cut
	}
	for len(r.chunks) > 0 && r.held+int64(len(c.data)) > r.limit {
		r.held -= int64(len(r.chunks[0].data))
		r.chunks = r.chunks[1:]
	}
	r.chunks = append(r.chunks, c)
	r.held += int64(len(c.data))
	r.start = r.chunks[0].off
	r.notify()
}

// close marks the end of the output.
func (r *outRing) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.notify()
}

func (r *outRing) notify() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// size is the offset after the last byte written.
func (r *outRing) size() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end
}

// read returns the events from cursor on (a "dropped" event first when
// cursor points before what the ring still holds), the cursor after them,
// whether the output has ended and everything was returned, and a channel
// closed at the next change.
func (r *outRing) read(cursor int64) (evs []api.OutputEvent, next int64, ended bool, wake <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cursor > r.end {
		cursor = r.end
	}
	if cursor < r.start {
		evs = append(evs, api.OutputEvent{Type: api.OutputDropped, Offset: r.start, Dropped: r.start - cursor})
		cursor = r.start
	}
	for _, c := range r.chunks {
		cend := c.off + int64(len(c.data))
		if cend <= cursor {
			continue
		}
		data := c.data
		if cursor > c.off {
			data = data[cursor-c.off:]
		}
		evs = append(evs, api.OutputEvent{Type: c.stream, Offset: cend - int64(len(data)), Data: data})
		cursor = cend
	}
	return evs, cursor, r.closed && cursor == r.end, r.wake
}
