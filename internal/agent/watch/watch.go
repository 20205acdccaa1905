// Package watch serves the agent's file watches (GET /files/watch): the
// changes under a directory of the sandbox, and with recursive every
// directory below it on the same file system, read from inotify and
// streamed as NDJSON. Each directory is opened through the sandbox root
// (internal/agent/files) before it is watched, never watched by path, and
// every watch is bounded: its queue, the directories it watches, and the
// watches one agent has open at once.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/internal/agent/files"
	"github.com/hutchdev/hutch/internal/agent/httpio"
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

// Config is what the watches need.
type Config struct {
	// Root is the sandbox root a watched directory is resolved in.
	Root *files.Root
	// Stopping is closed when the agent shuts down: it ends the watches,
	// which never end by themselves and would hold the drain of requests.
	Stopping <-chan struct{}
	Log      *slog.Logger
}

// Service serves the file watches.
type Service struct {
	root     *files.Root
	stopping <-chan struct{}
	log      *slog.Logger
}

// New is the watch service of cfg.
func New(cfg Config) *Service {
	return &Service{root: cfg.Root, stopping: cfg.Stopping, log: cfg.Log}
}

// Routes adds the watch's route to mux.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /files/watch", s.handleWatch)
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpio.WriteError(w, r, s.log, err)
}

// handleWatch answers GET /files/watch?path=&recursive=: the changes under
// a directory as an NDJSON stream of agentproto.WatchEvent, flushed as they are
// sent, until the client goes away or the directory is removed (a clean
// end) or the agent shuts down (a broken stream). The watch is in place
// before the answer's header is sent.
func (s *Service) handleWatch(w http.ResponseWriter, r *http.Request) {
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
	p, err := s.root.Resolve(q.Get("path"))
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
