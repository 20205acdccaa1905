package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// acceptsExecFrames reports whether an exec stream's request asks for
// binary frames (api.MediaExecFrames).
func acceptsExecFrames(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), api.MediaExecFrames)
}

// execFrames relays an exec stream as binary frames: the output's bytes as
// they came, the exit as JSON, flushed whenever nothing more is waiting.
func (a *API) execFrames(w http.ResponseWriter, r *http.Request, st sandbox.Stream[api.ExecEvent]) {
	w.Header().Set("Content-Type", api.MediaExecFrames)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	p := sandbox.StartPump(r.Context(), st, pumpAhead)
	var hdr []byte
	for {
		ev, ok := <-p.Events()
		if !ok {
			if p.Err() != nil {
				a.cfg.Log.Warn("exec stream ended", logattr.Sandbox(r.PathValue("id")), "err", p.Err())
			}
			return
		}
		for {
			kind, payload := api.FrameStdout, ev.Data
			switch ev.Type {
			case api.ExecStderr:
				kind = api.FrameStderr
			case api.ExecExit:
				b, err := json.Marshal(ev.Exit)
				if err != nil {
					return
				}
				kind, payload = api.FrameExit, b
			}
			hdr = api.AppendExecFrameHeader(hdr[:0], kind, len(payload))
			if _, err := w.Write(hdr); err != nil {
				return
			}
			if _, err := w.Write(payload); err != nil {
				return
			}
			if kind != api.FrameExit {
				p.Recycle(payload)
			}
			if kind == api.FrameExit {
				rc.Flush()
				return
			}
			if ev, ok = p.Ready(); !ok {
				break
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}
