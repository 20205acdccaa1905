package agent

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// retainedEvents is how many events the feed keeps for a control plane
// that reconnects (or restarts) and asks for what it missed.
const retainedEvents = 256

// eventFeed numbers the agent's events (process exits) and keeps the last
// retainedEvents of them; GET /events streams them. One feed per
// sandbox replaces a waiting request per process.
type eventFeed struct {
	mu     sync.Mutex
	seq    uint64
	events []agentproto.Event // the retained ones, oldest first
	wake   chan struct{}      // closed and replaced at each event
}

func newEventFeed() *eventFeed {
	return &eventFeed{wake: make(chan struct{})}
}

// publish numbers ev and wakes the streams.
func (f *eventFeed) publish(ev agentproto.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	ev.Seq = f.seq
	f.events = append(f.events, ev)
	if len(f.events) > retainedEvents {
		f.events = f.events[len(f.events)-retainedEvents:]
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// since returns the retained events numbered above after, the last
// number, and a channel closed at the next event.
func (f *eventFeed) since(after uint64) ([]agentproto.Event, uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []agentproto.Event
	for _, ev := range f.events {
		if ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, f.seq, f.wake
}

// processExited publishes the exit of a background process.
func (s *Server) processExited(info agentproto.Process) {
	s.events.publish(agentproto.Event{Type: agentproto.EventProcessExited, Process: &info})
}

// handleEvents answers GET /events?after=N: NDJSON, a hello with the last
// number, the retained events above after, then each event as it
// happens, until the client goes or the agent shuts down.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	var after uint64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.writeError(w, r, errdefs.Invalid("invalid_cursor", "after must be an event number, 0 or more"))
			return
		}
		after = n
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	evs, last, wake := s.events.since(after)
	if enc.Encode(agentproto.Event{Type: agentproto.EventHello, Seq: last}) != nil {
		return
	}
	for {
		for _, ev := range evs {
			if enc.Encode(ev) != nil {
				return
			}
			after = ev.Seq
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-s.stopping:
			return
		}
		evs, _, wake = s.events.since(after)
	}
}
