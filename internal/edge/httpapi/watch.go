package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// watchFiles is GET /v1/sandboxes/{id}/files/watch: the agent's file watch
// relayed as Server-Sent Events, one per change (event: its type, data:
// the api.WatchEvent), with a comment line while idle. Errors before the
// stream (unknown sandbox, not running, bad path) are answered through
// writeError; the 200 goes out only once the agent's watch is in place.
// The stream ends cleanly when the watched directory is removed, and is
// aborted when the agent's stream breaks.
func (a *API) watchFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	recursive, err := queryBool(q.Get("recursive"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	wt, err := a.cfg.Sandboxes.Watch(r.Context(), r.PathValue("id"), q.Get("path"), recursive)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer wt.Close()
	sse, err := newSSE(w)
	if err != nil {
		return
	}
	err = a.relayWatch(r.Context(), sse, wt, sseHeartbeat)
	if errors.Is(err, io.EOF) || r.Context().Err() != nil {
		return // the watched directory is gone, or the client
	}
	// The agent's stream broke (the sandbox stopped): abort the answer, so
	// the client sees a broken stream rather than the clean end that means
	// the directory was removed.
	a.cfg.Log.Debug("watch stream broke", logattr.Sandbox(r.PathValue("id")), "err", err)
	panic(http.ErrAbortHandler)
}

// relayWatch writes the events of st as they come, and a heartbeat after
// each idle interval, until st fails (io.EOF: the watch ended), a write
// fails or ctx ends. Events of a type the API does not define are
// dropped, so nothing the agent sends can shape the stream.
func (a *API) relayWatch(ctx context.Context, sse *sseWriter, st sandbox.Stream[api.WatchEvent], heartbeat time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := sandbox.StartPump(ctx, st, pumpAhead)
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				if p.Err() != nil {
					return p.Err()
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return io.EOF
			}
			switch ev.Type {
			case api.WatchCreate, api.WatchWrite, api.WatchRemove, api.WatchRename, api.WatchOverflow:
			default:
				a.cfg.Log.Warn("watch: event of an unknown type dropped", "type", ev.Type)
				continue
			}
			if err := sse.event("", ev.Type, ev); err != nil {
				return err
			}
			t.Reset(heartbeat)
		case <-t.C:
			if err := sse.heartbeat(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
