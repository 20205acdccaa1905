package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
)

// Sandbox ids of the fake server: one running, one destroyed.
const (
	sbRunning   = "01m81b6tzw5q2hcj7by01dvd6v"
	sbDestroyed = "01m81b6tzw5q2hcj7by01dvd6w"
)

// fakeServer answers the sandbox routes the CLI calls with canned
// answers.
type fakeServer struct {
	recorder
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	s := &fakeServer{}
	mux := http.NewServeMux()
	sandboxes := []api.Sandbox{{ID: sbRunning, State: api.StateRunning}, {ID: sbDestroyed, State: api.StateDestroyed}}
	mux.HandleFunc("GET /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.SandboxList{Sandboxes: sandboxes})
	})
	mux.HandleFunc("POST /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusCreated, sandboxes[0])
	})
	mux.HandleFunc("GET /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != sbRunning {
			writeTestJSON(w, http.StatusNotFound, api.Error{Error: api.ErrorBody{Code: "sandbox_not_found", Message: "no such sandbox"}})
			return
		}
		writeTestJSON(w, http.StatusOK, sandboxes[0])
	})
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	for _, p := range []string{"POST /v1/sandboxes/{id}/pause", "POST /v1/sandboxes/{id}/timeout", "POST /v1/sandboxes/{id}/restore"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeTestJSON(w, http.StatusOK, sandboxes[0])
		})
	}
	mux.HandleFunc("PUT /v1/sandboxes/{id}/network", func(w http.ResponseWriter, r *http.Request) {
		var p api.NetworkPolicy
		json.NewDecoder(r.Body).Decode(&p)
		writeTestJSON(w, http.StatusOK, api.Network{Policy: p})
	})
	mux.HandleFunc("PUT /v1/sandboxes/{id}/ports/{port}", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.Port{Port: 8080, Public: true, URL: "http://8080-x.localhost/"})
	})
	mux.HandleFunc("POST /v1/sandboxes/{id}/ports/{port}/url", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.PreviewURL{URL: "http://8080-x.localhost/?hutch_token=t"})
	})
	mux.HandleFunc("POST /v1/sandboxes/{id}/files/{op}", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.FileInfo{Path: "/w/made"})
	})
	mux.HandleFunc("DELETE /v1/sandboxes/{id}/files", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /v1/sandboxes/{id}/files", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.FileInfo{Path: "/w/a.txt", Size: 5})
	})
	mux.HandleFunc("GET /v1/sandboxes/{id}/files", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("PUT /v1/sandboxes/{id}/files/tar", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.TarResult{Path: "/w/t"})
	})
	mux.HandleFunc("POST /v1/sandboxes/{id}/snapshots", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusCreated, api.Snapshot{ID: "s1", SandboxID: r.PathValue("id")})
	})
	mux.HandleFunc("POST /v1/sandboxes/{id}/fork", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusCreated, api.ForkResult{Sandboxes: []api.Sandbox{{ID: "f1"}, {ID: "f2"}}})
	})
	s.serve(t, mux)
	return s
}

// recorder is a test server that records every request as
// "METHOD /path?query body" (the body when it is JSON) and runs hutch
// against itself.
type recorder struct {
	url string

	mu   sync.Mutex
	reqs []string
}

// serve starts the server with h, to stop when t ends.
func (s *recorder) serve(t *testing.T, h http.Handler) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		line := r.Method + " " + r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			line += "?" + r.URL.RawQuery
		}
		if len(b) > 0 && r.Header.Get("Content-Type") == "application/json" {
			line += " " + strings.TrimSpace(string(b))
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, line)
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
}

// run runs hutch args against the server with stdin and returns stdout,
// stderr, the exit status and the requests the server saw.
func (s *recorder) run(stdin string, args ...string) (string, string, int, []string) {
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
	e, errb := testEnv(map[string]string{"HUTCH_URL": s.url, "HUTCH_API_KEY": "hk_x_y"})
	if stdin != "" {
		e.stdin, e.stdinTTY = strings.NewReader(stdin), false
	}
	code := run(context.Background(), e, args)
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.stdout.(*bytes.Buffer).String(), errb.String(), code, s.reqs
}
