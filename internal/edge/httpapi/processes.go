package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

func (a *API) startProcess(w http.ResponseWriter, r *http.Request) {
	var req api.ProcessRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	p, err := a.cfg.Sandboxes.StartProcess(r.Context(), r.PathValue("id"), req)
	a.answer(w, r, http.StatusCreated, p, err)
}

func (a *API) listProcesses(w http.ResponseWriter, r *http.Request) {
	l, err := a.cfg.Sandboxes.ListProcesses(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, l, err)
}

// pidOf reads the pid in the path, or answers the error.
func (a *API) pidOf(w http.ResponseWriter, r *http.Request) (int, bool) {
	pid, err := strconv.Atoi(r.PathValue("pid"))
	if err != nil || pid <= 0 {
		a.writeError(w, r, errdefs.Invalid("invalid_pid", "%q is not a process id", r.PathValue("pid")))
		return 0, false
	}
	return pid, true
}

func (a *API) getProcess(w http.ResponseWriter, r *http.Request) {
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	p, err := a.cfg.Sandboxes.GetProcess(r.Context(), r.PathValue("id"), pid)
	a.answer(w, r, http.StatusOK, p, err)
}

func (a *API) processStdin(w http.ResponseWriter, r *http.Request) {
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	closeAfter, err := queryBool(r.URL.Query().Get("close"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p, err := a.cfg.Sandboxes.WriteStdin(r.Context(), r.PathValue("id"), pid, http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes), closeAfter)
	a.answer(w, r, http.StatusOK, p, err)
}

func (a *API) signalProcess(w http.ResponseWriter, r *http.Request) {
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	var req api.SignalRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	p, err := a.cfg.Sandboxes.SignalProcess(r.Context(), r.PathValue("id"), pid, req)
	a.answer(w, r, http.StatusOK, p, err)
}

func (a *API) resizeProcess(w http.ResponseWriter, r *http.Request) {
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	var size api.TermSize
	if err := a.decodeJSON(w, r, &size); err != nil {
		a.writeError(w, r, err)
		return
	}
	p, err := a.cfg.Sandboxes.ResizeProcess(r.Context(), r.PathValue("id"), pid, size)
	a.answer(w, r, http.StatusOK, p, err)
}

// waitProcess answers GET …/processes/{pid}/wait?timeout_ms=: the process
// once it ends, or as it is when the timeout (at most 10 minutes) comes.
func (a *API) waitProcess(w http.ResponseWriter, r *http.Request) {
	pid, ok := a.pidOf(w, r)
	if !ok {
		return
	}
	timeout := 10 * time.Minute
	if v := r.URL.Query().Get("timeout_ms"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			a.writeError(w, r, errdefs.Invalid("invalid_timeout", "timeout_ms must be 0 or more"))
			return
		}
		timeout = min(time.Duration(ms)*time.Millisecond, timeout)
	}
	p, err := a.cfg.Sandboxes.WaitProcess(r.Context(), r.PathValue("id"), pid, timeout)
	a.answer(w, r, http.StatusOK, p, err)
}
