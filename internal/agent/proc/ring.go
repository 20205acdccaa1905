package proc

import (
	"sync"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
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
	held   int64      // bytes the chunks' buffers take (their capacity)
	limit  int64
	closed bool
	wake   chan struct{} // closed and replaced on every change
}

type outChunk struct {
	stream string
	off    int64
	data   []byte
	lent   bool // a reader got data: it must not be reused
}

func newOutRing(limit int64) *outRing {
	return &outRing{limit: limit, wake: make(chan struct{})}
}

// write appends p (copied) as output of stream.
func (r *outRing) write(stream string, p []byte) {
	if len(p) > 0 {
		r.put(stream, exactCopy(p))
	}
}

// put appends p as output of stream, taking p: the caller must not touch
// it again. It returns a buffer pushed out of the ring, which no reader
// holds any more, for the caller to reuse, or nil.
func (r *outRing) put(stream string, p []byte) (spare []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := outChunk{stream: stream, off: r.end, data: p}
	r.end += int64(len(p))
	if int64(cap(c.data)) > r.limit { // keep only what fits
		keep := exactCopy(c.data[max(0, int64(len(c.data))-r.limit):])
		c.data, c.off = keep, r.end-int64(len(keep))
	}
	for len(r.chunks) > 0 && r.held+int64(cap(c.data)) > r.limit {
		old := r.chunks[0]
		r.held -= int64(cap(old.data))
		r.chunks = r.chunks[1:]
		if !old.lent {
			spare = old.data[:cap(old.data)]
		}
	}
	r.chunks = append(r.chunks, c)
	r.held += int64(cap(c.data))
	r.start = r.chunks[0].off
	r.notify()
	return spare
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
func (r *outRing) read(cursor int64) (evs []agentproto.OutputEvent, next int64, ended bool, wake <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cursor > r.end {
		cursor = r.end
	}
	if cursor < r.start {
		evs = append(evs, agentproto.OutputEvent{Type: agentproto.Dropped, Offset: r.start, Dropped: r.start - cursor})
		cursor = r.start
	}
	merged := false // the last event's data is a buffer of its own
	for i := range r.chunks {
		c := &r.chunks[i]
		cend := c.off + int64(len(c.data))
		if cend <= cursor {
			continue
		}
		data := c.data
		if cursor > c.off {
			data = data[cursor-c.off:]
		}
		c.lent = true
		// Contiguous output of one stream goes as one event, up to
		// maxEvent: fewer events to encode and flush. A merged event gets
		// a buffer of its own; the ring's are shared with other readers.
		if n := len(evs); n > 0 && evs[n-1].Type == c.stream && len(evs[n-1].Data)+len(data) <= maxEvent {
			prev := evs[n-1].Data
			if !merged {
				prev = append(make([]byte, 0, maxEvent), prev...)
				merged = true
			}
			evs[n-1].Data = append(prev, data...)
		} else {
			evs = append(evs, agentproto.OutputEvent{Type: c.stream, Offset: cend - int64(len(data)), Data: data})
			merged = false
		}
		cursor = cend
	}
	return evs, cursor, r.closed && cursor == r.end, r.wake
}

// maxEvent bounds the data of one event read merges chunks into.
const maxEvent = 256 << 10

// exactCopy copies p into a buffer whose capacity is its length (append,
// as in bytes.Clone, rounds the capacity up), so the ring counts it right.
func exactCopy(p []byte) []byte {
	b := make([]byte, len(p))
	copy(b, p)
	return b
}
