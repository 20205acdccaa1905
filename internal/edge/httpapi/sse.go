package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// sseHeartbeat is how often an idle Server-Sent Events stream sends a
// comment line, so proxies keep it open and a dead client is noticed.
const sseHeartbeat = 15 * time.Second

// sseKeep bounds the buffer an sseWriter keeps between sends.
const sseKeep = 1 << 20

// sseWriter writes a Server-Sent Events stream. event writes one event
// and flushes it at once; a handler that has several events at hand
// appends them with begin and end and sends them together with send, one
// write and one flush (streams are never held back to wait for more).
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte // the events not yet sent; reused
}

// newSSE answers 200 with the event-stream headers.
func newSSE(w http.ResponseWriter) (*sseWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	return s, s.rc.Flush()
}

// event writes one event: id (may be empty) is what a client sends back as
// Last-Event-ID to resume after it, typ the event's name, data as JSON.
func (s *sseWriter) event(id, typ string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	s.end(append(s.begin(id, typ), b...))
	return s.send()
}

// begin appends the head of an event to the events not yet sent and
// returns the buffer, for the caller to append the event's data (JSON,
// one line) and hand it to end.
// An id or a name that would break the event's framing (a line break) is
// left out.
func (s *sseWriter) begin(id, typ string) []byte {
	b := s.buf
	if id != "" && !strings.ContainsAny(id, "\r\n") {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	if typ != "" && !strings.ContainsAny(typ, "\r\n") {
		b = append(append(append(b, "event: "...), typ...), '\n')
	}
	return append(b, "data: "...)
}

// end closes the event begun in b.
func (s *sseWriter) end(b []byte) { s.buf = append(b, '\n', '\n') }

// pending is how many bytes of events are waiting for send.
func (s *sseWriter) pending() int { return len(s.buf) }

// send writes the events appended so far and flushes them.
func (s *sseWriter) send() error {
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	if cap(s.buf) > sseKeep {
		s.buf = nil // a rare big batch is not kept for the stream's life
	}
	if err != nil {
		return err
	}
	return s.rc.Flush()
}

// heartbeat writes a comment line.
func (s *sseWriter) heartbeat() error {
	if _, err := s.w.Write([]byte(": keep-alive\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}

// wantsSSE reports whether the client asked for an event stream.
func wantsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}
