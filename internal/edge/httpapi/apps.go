package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/apps"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// queryInt reads an optional integer parameter from lo to hi; absent is 0.
func queryInt(r *http.Request, name string, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, errdefs.Invalid("invalid_"+name, "%s must be a number from %d to %d", name, lo, hi)
	}
	return n, nil
}

// The apps routes: /v1/apps and below.

func (a *API) apps() (*apps.Service, error) {
	if a.cfg.Apps == nil {
		return nil, errdefs.Unavailable("apps_unavailable", "this server runs no apps layer")
	}
	return a.cfg.Apps, nil
}

func (a *API) listPresets(w http.ResponseWriter, r *http.Request, _ *apps.Service) {
	writeJSON(w, http.StatusOK, apps.Presets())
}

func (a *API) createApp(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	var req api.CreateAppRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	// Its dev and live sandboxes are made where it is created: placed as
	// one sandbox of its template and limits.
	if a.placeAndSend(w, r, api.CreateSandboxRequest{Template: req.Template, Limits: req.Limits}, req) {
		return
	}
	app, err := svc.Create(r.Context(), req)
	a.answer(w, r, http.StatusCreated, app, err)
}

func (a *API) listApps(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	out, err := svc.List(r.Context())
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) getApp(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	out, err := svc.Get(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) patchApp(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	var req api.PatchAppRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := svc.Patch(r.Context(), r.PathValue("id"), req)
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) deleteApp(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	if err := svc.Delete(r.Context(), r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) promoteApp(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	if err := a.decodeOptional(w, r, &struct{}{}); err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := svc.Promote(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) rollbackApp(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	if err := a.decodeOptional(w, r, &struct{}{}); err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := svc.Rollback(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) undoApp(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	var req api.UndoRequest
	if err := a.decodeOptional(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := svc.Undo(r.Context(), r.PathValue("id"), req)
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) createCheckpoint(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	var req api.CreateCheckpointRequest
	if err := a.decodeOptional(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := svc.Checkpoint(r.Context(), r.PathValue("id"), req)
	a.answer(w, r, http.StatusCreated, out, err)
}

func (a *API) listCheckpoints(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	out, err := svc.Checkpoints(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) createTask(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	var req api.CreateTaskRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	t, err := svc.CreateTask(r.Context(), r.PathValue("id"), req)
	a.answer(w, r, http.StatusCreated, t, err)
}

func (a *API) listTasks(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	limit, err := queryInt(r, "limit", 0, apps.MaxTasks)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := svc.ListTasks(r.Context(), r.PathValue("id"), limit)
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) getTask(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	out, err := svc.GetTask(r.Context(), r.PathValue("id"), r.PathValue("task"))
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) cancelTask(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	out, err := svc.CancelTask(r.Context(), r.PathValue("id"), r.PathValue("task"))
	a.answer(w, r, http.StatusOK, out, err)
}

// taskLogPoll is how often a followed task log looks for more.
const taskLogPoll = 200 * time.Millisecond

// taskLog streams a task's log as Server-Sent Events, one "log" event per
// chunk with its number as the id, then one "end" event with the task once
// it has ended. Last-Event-ID (or ?after=) resumes after a chunk.
func (a *API) taskLog(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	appID, taskID := r.PathValue("id"), r.PathValue("task")
	after := r.Header.Get("Last-Event-ID")
	if v := r.URL.Query().Get("after"); v != "" {
		after = v
	}
	var seq int64
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			a.writeError(w, r, errdefs.Invalid("invalid_cursor", "after (or Last-Event-ID) must be a log chunk's number"))
			return
		}
		seq = n
	}
	if _, err := svc.GetTask(r.Context(), appID, taskID); err != nil {
		a.writeError(w, r, err)
		return
	}
	release, ok := a.holdStream(w, r)
	if !ok {
		return
	}
	defer release()
	sse, err := newSSE(w)
	if err != nil {
		return
	}
	heartbeat := time.Now()
	for {
		chunks, done, err := svc.TaskLog(r.Context(), appID, taskID, seq)
		if err != nil {
			return
		}
		for _, c := range chunks {
			seq = c.Seq
			b := sse.begin(strconv.FormatInt(c.Seq, 10), "log")
			sse.end(append(b, c.Data...))
		}
		if sse.pending() > 0 {
			if sse.send() != nil {
				return
			}
			heartbeat = time.Now()
		}
		if done && len(chunks) == 0 {
			t, err := svc.GetTask(r.Context(), appID, taskID)
			if err == nil {
				_ = sse.event("", "end", t)
			}
			return
		}
		if len(chunks) > 0 {
			continue // there may be more at once
		}
		if time.Since(heartbeat) > sseHeartbeat {
			if _, err := w.Write([]byte(": keepalive\n\n")); err != nil || sse.rc.Flush() != nil {
				return
			}
			heartbeat = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(taskLogPoll):
		}
	}
}

func (a *API) appProcesses(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	out, err := svc.Processes(r.Context(), r.PathValue("id"), r.URL.Query().Get("role"))
	a.answer(w, r, http.StatusOK, out, err)
}

// appLogs streams one app process's log lines (NDJSON), the last tail of
// them and, with follow, what comes after until the client goes.
func (a *API) appLogs(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	q := r.URL.Query()
	tail, err := queryInt(r, "tail", 0, 10000)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	follow, err := queryBool(q.Get("follow"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	st, err := svc.Logs(r.Context(), r.PathValue("id"), q.Get("role"), r.PathValue("name"), tail, follow)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer st.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	// The lines the agent has sent go out together, flushed once.
	p := sandbox.StartPump(r.Context(), st, pumpAhead)
	enc := json.NewEncoder(w)
	for line, ok := <-p.Events(); ok; line, ok = <-p.Events() {
		for more := true; more; line, more = p.Ready() {
			if enc.Encode(line) != nil {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}

func (a *API) listConfig(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	out, err := svc.ListConfig(r.Context(), r.PathValue("id"))
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) createConfig(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	var req api.SetConfigRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	out, err := svc.SetConfig(r.Context(), r.PathValue("id"), "", req, true)
	a.answer(w, r, http.StatusCreated, out, err)
}

func (a *API) patchConfig(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	var req api.SetConfigRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	if req.Key != "" && req.Key != r.PathValue("key") {
		a.writeError(w, r, errdefs.Invalid("invalid_config_key", "the body's key %q is not the path's %q; rename by delete and create", req.Key, r.PathValue("key")))
		return
	}
	out, err := svc.SetConfig(r.Context(), r.PathValue("id"), r.PathValue("key"), req, false)
	a.answer(w, r, http.StatusOK, out, err)
}

func (a *API) deleteConfig(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	if err := svc.DeleteConfig(r.Context(), r.PathValue("id"), r.PathValue("key")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listAppEvents is GET /v1/apps/{id}/events: the app's own log, paged or
// (text/event-stream) followed.
func (a *API) listAppEvents(w http.ResponseWriter, r *http.Request, svc *apps.Service) {
	q, err := eventQuery(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if _, err := svc.Get(r.Context(), r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	q.AppID = r.PathValue("id")
	a.answerEvents(w, r, q)
}

// decodeOptional decodes a JSON body that may be left out.
func (a *API) decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return a.decodeJSON(w, r, v)
}
