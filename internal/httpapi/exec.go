package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/logattr"
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
func (a *API) execStream(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	st, err := a.cfg.Sandboxes.ExecStream(r.Context(), r.PathValue("id"), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer st.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The header at once: a command that prints nothing for a while must
	// not keep its caller waiting for the stream to begin.
	if rc.Flush() != nil {
		return
	}
	enc := json.NewEncoder(w)
	for {
		ev, err := st.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				a.cfg.Log.Warn("exec stream ended", logattr.Sandbox(r.PathValue("id")), "err", err)
			}
			return
		}
		if enc.Encode(ev) != nil || rc.Flush() != nil {
			return
		}
		if ev.Type == api.ExecExit {
			return
		}
	}
}
