package supervisor

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// The app supervisor's routes (agentproto.FeatureApp); see
// agentproto/app.go for the API.

const (
	// defaultLogTail and maxLogTail bound GET /app/processes/{name}/logs'
	// tail.
	defaultLogTail = 100
	maxLogTail     = 10000
)

// Routes adds the supervisor's routes to mux.
func (sv *Supervisor) Routes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /app", sv.handleAppConfigure)
	mux.HandleFunc("GET /app", sv.handleAppStatus)
	mux.HandleFunc("POST /app/reload", sv.handleAppReload)
	mux.HandleFunc("POST /app/restart", sv.handleAppRestart)
	mux.HandleFunc("POST /app/stop", sv.handleAppStop)
	mux.HandleFunc("GET /app/processes/{name}/logs", sv.handleAppLogs)
}

func (sv *Supervisor) handleAppConfigure(w http.ResponseWriter, r *http.Request) {
	var cfg agentproto.AppConfig
	if err := httpio.DecodeJSON(w, r, sv.maxRequestBytes, &cfg); err != nil {
		sv.writeError(w, r, err)
		return
	}
	sv.answerApp(w, r)(sv.configure(cfg))
}

func (sv *Supervisor) handleAppStatus(w http.ResponseWriter, r *http.Request) {
	httpio.WriteJSON(w, http.StatusOK, sv.status())
}

// handleAppReload answers 200 with the status whatever the manifest holds:
// an invalid one is the status's manifest_error, and the last good one
// goes on running.
func (sv *Supervisor) handleAppReload(w http.ResponseWriter, r *http.Request) {
	sv.answerApp(w, r)(sv.reloadNow())
}

func (sv *Supervisor) handleAppRestart(w http.ResponseWriter, r *http.Request) {
	var req agentproto.AppRestartRequest
	if r.ContentLength != 0 {
		if err := httpio.DecodeJSON(w, r, sv.maxRequestBytes, &req); err != nil {
			sv.writeError(w, r, err)
			return
		}
	}
	sv.answerApp(w, r)(sv.restart(req.Names))
}

func (sv *Supervisor) handleAppStop(w http.ResponseWriter, r *http.Request) {
	sv.answerApp(w, r)(sv.stop())
}

func (sv *Supervisor) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpio.WriteError(w, r, sv.log, err)
}

// answerApp writes a supervisor call's status or error.
func (sv *Supervisor) answerApp(w http.ResponseWriter, r *http.Request) func(agentproto.AppStatus, error) {
	return func(st agentproto.AppStatus, err error) {
		if err != nil {
			sv.writeError(w, r, err)
			return
		}
		httpio.WriteJSON(w, http.StatusOK, st)
	}
}

// handleAppLogs answers GET /app/processes/{name}/logs?tail=&follow=: the
// last tail lines of the process's log as NDJSON agentproto.LogLines; with
// follow, then every new line until the request ends, supervision stops or
// the agent shuts down.
func (sv *Supervisor) handleAppLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail := defaultLogTail
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			sv.writeError(w, r, errdefs.Invalid("invalid_tail", "tail must be a number of lines, 0 or more"))
			return
		}
		tail = min(n, maxLogTail)
	}
	follow, _ := strconv.ParseBool(q.Get("follow"))
	log, err := sv.processLog(r.PathValue("name"))
	if err != nil {
		sv.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	if rc.Flush() != nil {
		return
	}
	cursor := log.tail(tail)
	for {
		lines, next, closed, wake := log.read(cursor)
		for _, l := range lines {
			if enc.Encode(l) != nil {
				return
			}
		}
		cursor = next
		if len(lines) > 0 && rc.Flush() != nil {
			return
		}
		if !follow || closed {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-sv.stopping:
			return
		}
	}
}
