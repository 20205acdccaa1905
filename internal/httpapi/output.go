package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/logattr"
	"github.com/hutchdev/hutch/internal/sandbox"
)

// processOutput answers GET …/processes/{pid}/output: the process's output
// from a cursor (?cursor=, or Last-Event-ID when resuming) as Server-Sent
// Events (each id is the cursor after it), or as WebSocket messages (one
// api.OutputEvent as JSON each) when the request is an upgrade. With
// follow (the default) it goes on until the process's output ends, with
// an "exit" event.
func (a *API) processOutput(w http.ResponseWriter, r *http.Request) {
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	cur := q.Get("cursor")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		cur = id
	}
	cursor, err := parseCursor(cur)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	follow := true
	if v := q.Get("follow"); v != "" {
		if follow, err = strconv.ParseBool(v); err != nil {
			a.writeError(w, r, errdefs.Invalid("invalid_request", "follow=%q is not true or false", v))
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st, err := a.cfg.Sandboxes.ProcessOutput(ctx, r.PathValue("id"), pid, cursor, follow)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer st.Close()
	if isWebSocket(r) {
		a.outputWebSocket(ctx, w, r, st)
		return
	}
	a.outputSSE(ctx, w, r, st)
}

func parseCursor(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errdefs.Invalid("invalid_cursor", "cursor %q must be a byte offset, 0 or more", v)
	}
	return n, nil
}

func (a *API) outputSSE(ctx context.Context, w http.ResponseWriter, r *http.Request, st sandbox.Stream[api.OutputEvent]) {
	sse, err := newSSE(w)
	if err != nil {
		return
	}
	p := startPump(ctx, st)
	tick := time.NewTicker(sseHeartbeat)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				if p.err != nil {
					a.cfg.Log.Warn("process output stream ended", logattr.Sandbox(r.PathValue("id")), "err", p.err)
				}
				return
			}
			if sse.event(strconv.FormatInt(nextCursor(ev), 10), ev.Type, ev) != nil {
				return
			}
		case <-tick.C:
			if sse.heartbeat() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// nextCursor is where a stream resumes after ev.
func nextCursor(ev api.OutputEvent) int64 { return ev.Offset + int64(len(ev.Data)) }

func (a *API) outputWebSocket(ctx context.Context, w http.ResponseWriter, r *http.Request, st sandbox.Stream[api.OutputEvent]) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx = conn.CloseRead(ctx)
	p := startPump(ctx, st)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				conn.Close(websocket.StatusNormalClosure, "")
				return
			}
			if wsjson.Write(ctx, conn, ev) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// isWebSocket reports whether r asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && headerHas(r.Header, "Connection", "upgrade")
}

// headerHas reports whether the comma-separated header name holds token,
// case-insensitively.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
