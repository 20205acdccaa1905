package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// sseHeartbeat is how often an idle Server-Sent Events stream sends a
// comment line, so proxies keep it open and a dead client is noticed.
const sseHeartbeat = 15 * time.Second

// sseWriter writes a Server-Sent Events stream: one event per call, each
// flushed at once (streams are never buffered).
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
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
	var sb strings.Builder
	if id != "" {
		fmt.Fprintf(&sb, "id: %s\n", id)
	}
	if typ != "" {
		fmt.Fprintf(&sb, "event: %s\n", typ)
	}
	fmt.Fprintf(&sb, "data: %s\n\n", b)
	if _, err := s.w.Write([]byte(sb.String())); err != nil {
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
