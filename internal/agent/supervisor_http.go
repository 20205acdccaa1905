package agent

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
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

func (s *Server) appRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /app", s.handleAppConfigure)
	mux.HandleFunc("GET /app", s.handleAppStatus)
	mux.HandleFunc("POST /app/reload", s.handleAppReload)
	mux.HandleFunc("POST /app/restart", s.handleAppRestart)
	mux.HandleFunc("POST /app/stop", s.handleAppStop)
	mux.HandleFunc("GET /app/processes/{name}/logs", s.handleAppLogs)
}

func (s *Server) handleAppConfigure(w http.ResponseWriter, r *http.Request) {
	var cfg agentproto.AppConfig
	if err := decodeJSON(w, r, s.cfg.MaxRequestBytes, &cfg); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answerApp(w, r)(s.app.configure(cfg))
}

func (s *Server) handleAppStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.app.status())
}

// handleAppReload answers 200 with the status whatever the manifest holds:
// an invalid one is the status's manifest_error, and the last good one
// goes on running.
func (s *Server) handleAppReload(w http.ResponseWriter, r *http.Request) {
	s.answerApp(w, r)(s.app.reloadNow())
}

func (s *Server) handleAppRestart(w http.ResponseWriter, r *http.Request) {
	var req agentproto.AppRestartRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.answerApp(w, r)(s.app.restart(req.Names))
}

func (s *Server) handleAppStop(w http.ResponseWriter, r *http.Request) {
	s.answerApp(w, r)(s.app.stop())
}

// answerApp writes a supervisor call's status or error.
func (s *Server) answerApp(w http.ResponseWriter, r *http.Request) func(agentproto.AppStatus, error) {
	return func(st agentproto.AppStatus, err error) {
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
	}
}

// handleAppLogs answers GET /app/processes/{name}/logs?tail=&follow=: the
// last tail lines of the process's log as NDJSON agentproto.LogLines; with
// follow, then every new line until the request ends, supervision stops or
// the agent shuts down.
func (s *Server) handleAppLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail := defaultLogTail
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.writeError(w, r, errdefs.Invalid("invalid_tail", "tail must be a number of lines, 0 or more"))
			return
		}
		tail = min(n, maxLogTail)
	}
	follow, _ := strconv.ParseBool(q.Get("follow"))
	log, err := s.app.processLog(r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
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
		case <-s.stopping:
			return
		}
	}
}
