package agent

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/internal/errdefs"
)

// The bounds of file watches. They are variables so tests can shrink
// them; nothing else changes them.
var (
	// watchQueueMax bounds the events one watch holds before it reports
	// an overflow instead.
	watchQueueMax = 10000
	// watchWindow is how long an event waits before it is sent, taking in
	// repeated writes of its path.
	watchWindow = 50 * time.Millisecond
	// watchMaxDirs bounds the directories one recursive watch watches;
	// past it a directory gets an overflow event naming it.
	watchMaxDirs = 1 << 15
	// watchMoveWait is how long an IN_MOVED_FROM waits for its
	// IN_MOVED_TO before it counts as a move out of the watch.
	watchMoveWait = 10 * time.Millisecond
	// watchSlots bounds the watches open at once in this agent. Under the
	// namespace driver every sandbox's inotify instances and watches are
	// also charged to the user that made its user namespace, so one
	// sandbox's watches must not be able to use up that budget.
	watchSlots = make(chan struct{}, 16)
)

// handleWatch answers GET /files/watch?path=&recursive=: the changes under
// a directory as an NDJSON stream of api.WatchEvent, flushed as they are
// sent, until the client goes away or the directory is removed. The watch
// is in place before the answer's header is sent.
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recursive := false
	if v := q.Get("recursive"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.writeError(w, r, errdefs.Invalid("invalid_request", "recursive=%q is not true or false", v))
			return
		}
		recursive = b
	}
	p, err := s.resolve(q.Get("path"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	slots := watchSlots
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	default:
		s.writeError(w, r, errdefs.Conflict("watch_limit", "the sandbox has %d file watches open, the most it may", cap(slots)))
		return
	}
	wt, err := openWatcher(s.root, p, recursive, s.log)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	go wt.run()
	defer wt.close()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	enc := json.NewEncoder(w)
	for {
		evs, err := wt.q.take(r.Context())
		if err != nil {
			return // the client went away, or the directory did
		}
		for _, ev := range evs {
			if enc.Encode(ev) != nil {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}
