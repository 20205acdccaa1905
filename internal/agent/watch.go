package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
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
	// namespace driver inotify instances and watches are also charged to
	// the user that made the sandbox's user namespace (hutch's), whose
	// budget (fs.inotify.max_user_instances, max_user_watches) every
	// sandbox and that user's own programs share: one sandbox's watches
	// must not take all of it.
	watchSlots = make(chan struct{}, 16)
)

// handleWatch answers GET /files/watch?path=&recursive=: the changes under
// a directory as an NDJSON stream of agentproto.WatchEvent, flushed as they are
// sent, until the client goes away or the directory is removed (a clean
// end) or the agent shuts down (a broken stream). The watch is in place
// before the answer's header is sent.
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
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stopping := s.stopping
	go func() {
		select {
		case <-stopping:
			cancel()
		case <-ctx.Done():
		}
	}()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	enc := json.NewEncoder(w)
	for {
		evs, err := wt.q.take(ctx)
		if errors.Is(err, context.Canceled) && r.Context().Err() == nil {
			// The agent is shutting down: break the stream, so the client
			// does not take it for the clean end of a removed directory.
			panic(http.ErrAbortHandler)
		}
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
