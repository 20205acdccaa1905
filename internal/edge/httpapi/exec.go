package httpapi

import (
	"encoding/base64"
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

func (a *API) exec(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.cfg.Sandboxes.Exec(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// execStream relays the agent's NDJSON events as they come. Once the first
// byte is out, a failure can only end the stream: the client sees no exit
// event and knows the command's fate is unknown.
//
// The events the pump has already read go out in one write and one
// flush, runs of one stream's output merged into one event (up to
// maxJSONData bytes); nothing waits for more.
func (a *API) execStream(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	st, err := a.cfg.Sandboxes.ExecStream(ctx, r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer st.Close()
	if acceptsExecFrames(r) {
		a.execFrames(w, r, st)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The header at once: a command that prints nothing for a while must
	// not keep its caller waiting for the stream to begin.
	if rc.Flush() != nil {
		return
	}
	p := sandbox.StartPump(ctx, st, pumpAhead)
	var buf, merged []byte // the lines to send, merged output; reused
	for {
		ev, ok := <-p.Events()
		if !ok {
			if p.Err() != nil {
				a.cfg.Log.Warn("exec stream ended", logattr.Sandbox(r.PathValue("id")), "err", p.Err())
			}
			return
		}
		exit, isMerged := false, false
		for {
			next, ok := p.Ready()
			if ok && isOutput(ev.Type) && next.Type == ev.Type && len(ev.Data)+len(next.Data) <= maxJSONData {
				if !isMerged {
					if cap(merged) < maxJSONData {
						merged = make([]byte, 0, maxJSONData)
					}
					merged, isMerged = append(merged[:0], ev.Data...), true
					p.Recycle(ev.Data)
				}
				merged = append(merged, next.Data...)
				p.Recycle(next.Data)
				ev.Data = merged
				continue
			}
			buf = appendExecJSON(buf, ev)
			if !isMerged {
				p.Recycle(ev.Data)
			}
			exit = exit || ev.Type == api.ExecExit
			if len(buf) >= maxJSONData {
				if _, err := w.Write(buf); err != nil {
					return
				}
				buf = buf[:0]
			}
			if !ok {
				break
			}
			ev, isMerged = next, false
		}
		if _, err := w.Write(buf); err != nil || rc.Flush() != nil || exit {
			return
		}
		buf = buf[:0]
		if cap(buf) > 4*maxJSONData {
			buf = nil
		}
	}
}

// isOutput reports whether an exec event of type typ carries output.
func isOutput(typ string) bool { return typ == api.ExecStdout || typ == api.ExecStderr }

// appendExecJSON appends ev as one NDJSON line, byte for byte what a
// json.Encoder writes, without its allocations for output events.
func appendExecJSON(b []byte, ev api.ExecEvent) []byte {
	if !isOutput(ev.Type) || ev.Exit != nil {
		return append(appendJSON(b, ev), '\n')
	}
	b = append(append(append(b, `{"type":"`...), ev.Type...), '"')
	if len(ev.Data) > 0 {
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, ev.Data)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}
