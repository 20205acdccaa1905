package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

const testKey = "hk_test_secret"

// fakeServer implements a few /v1 routes for real over in-memory maps, and
// records every request it sees.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	seq       int
	sandboxes map[string]*api.Sandbox
	files     map[string][]byte // sandbox id + ":" + path
	requests  []recorded

	// streamStep, when set, is received from before each exec stream
	// event after the first, so a test controls the pace.
	streamStep chan struct{}
}

// recorded is what the fake saw of one request.
type recorded struct {
	Method, Path, RawQuery, Auth, ContentType, UserAgent string
	Body                                                 []byte
}

func newFake(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, sandboxes: map[string]*api.Sandbox{}, files: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	mux.HandleFunc("GET /v1/info", f.auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.Info{Version: "test", Driver: "fake", Isolation: api.IsolationDegraded})
	}))
	mux.HandleFunc("POST /v1/keys", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var req api.CreateKeyRequest
		if !decode(w, r, &req) {
			return
		}
		writeJSON(w, http.StatusCreated, api.Key{ID: "k1", Name: req.Name, Role: req.Role, Secret: "hk_new"})
	}))
	mux.HandleFunc("DELETE /v1/keys/{id}", f.auth(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "key_not_found", "no key "+r.PathValue("id"))
	}))
	mux.HandleFunc("POST /v1/sandboxes", f.auth(f.createSandbox))
	mux.HandleFunc("GET /v1/sandboxes", f.auth(f.listSandboxes))
	mux.HandleFunc("GET /v1/sandboxes/{id}", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		writeJSON(w, http.StatusOK, sb)
	})))
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		delete(f.sandboxes, sb.ID)
		w.WriteHeader(http.StatusNoContent)
	})))
	mux.HandleFunc("POST /v1/sandboxes/{id}/stop", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		sb.State = api.StateStopped
		writeJSON(w, http.StatusOK, sb)
	})))
	mux.HandleFunc("POST /v1/sandboxes/{id}/exec", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		var req api.ExecRequest
		if !decode(w, r, &req) {
			return
		}
		writeJSON(w, http.StatusOK, api.ExecResult{ExitCode: 0, Stdout: strings.Join(req.Cmd, " ") + "\n" + req.Stdin})
	})))
	mux.HandleFunc("POST /v1/sandboxes/{id}/exec/stream", f.auth(f.execStream))
	mux.HandleFunc("PUT /v1/sandboxes/{id}/files", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
			return
		}
		p := r.URL.Query().Get("path")
		f.files[sb.ID+":"+p] = b
		writeJSON(w, http.StatusOK, api.FileInfo{Path: p, Type: api.FileRegular, Size: int64(len(b)), Mode: r.URL.Query().Get("mode")})
	})))
	mux.HandleFunc("GET /v1/sandboxes/{id}/files", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		b, ok := f.files[sb.ID+":"+r.URL.Query().Get("path")]
		if !ok {
			writeError(w, http.StatusNotFound, "file_not_found", "no such file")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})))
	mux.HandleFunc("DELETE /v1/sandboxes/{id}/files", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		w.WriteHeader(http.StatusNoContent)
	})))
	mux.HandleFunc("POST /v1/sandboxes/{id}/files/move", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		var req api.MoveRequest
		if !decode(w, r, &req) {
			return
		}
		writeError(w, http.StatusConflict, "file_exists", req.To+" exists")
	})))
	mux.HandleFunc("PUT /v1/sandboxes/{id}/files/tar", f.auth(f.withSandbox(func(w http.ResponseWriter, r *http.Request, sb *api.Sandbox) {
		n, _ := io.Copy(io.Discard, r.Body)
		writeJSON(w, http.StatusOK, api.TarResult{Path: r.URL.Query().Get("path"), Files: 1, Bytes: n})
	})))
	mux.HandleFunc("GET /bad-gateway/v1/info", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>\n<body>upstream   down</body></html>")
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		f.mu.Lock()
		f.requests = append(f.requests, recorded{
			Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"),
			UserAgent: r.Header.Get("User-Agent"), Body: body,
		})
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// client returns a client for the fake with the right key.
func (f *fakeServer) client(opts ...client.Option) *client.Client {
	return client.New(f.srv.URL, testKey, opts...)
}

// last returns the last request the fake saw.
func (f *fakeServer) last() recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		f.t.Fatal("no request seen")
	}
	return f.requests[len(f.requests)-1]
}

// reset forgets the requests seen so far.
func (f *fakeServer) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = nil
}

// addSandboxes adds n running sandboxes with ids s001, s002, …
func (f *fakeServer) addSandboxes(n int, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.seq++
		id := fmt.Sprintf("s%03d", f.seq)
		f.sandboxes[id] = &api.Sandbox{ID: id, State: api.StateRunning, Template: "host", Driver: "fake", Labels: labels, CreatedAt: time.Now()}
	}
}

func (f *fakeServer) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch a := r.Header.Get("Authorization"); a {
		case "":
			writeError(w, http.StatusUnauthorized, "missing_api_key", "missing API key")
		case "Bearer " + testKey:
			h(w, r)
		default:
			writeError(w, http.StatusUnauthorized, "invalid_api_key", "invalid API key")
		}
	}
}

func (f *fakeServer) withSandbox(h func(http.ResponseWriter, *http.Request, *api.Sandbox)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		sb, ok := f.sandboxes[r.PathValue("id")]
		if !ok {
			writeError(w, http.StatusNotFound, "sandbox_not_found", "sandbox "+r.PathValue("id")+" not found")
			return
		}
		h(w, r, sb)
	}
}

func (f *fakeServer) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req api.CreateSandboxRequest
	if !decode(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	sb := &api.Sandbox{ID: fmt.Sprintf("s%03d", f.seq), State: api.StateRunning, Template: req.Template, Labels: req.Labels, TimeoutS: req.TimeoutS}
	if req.Limits != nil {
		sb.Limits = *req.Limits
	}
	f.sandboxes[sb.ID] = sb
	writeJSON(w, http.StatusCreated, sb)
}

// listSandboxes pages through sandboxes in id order; the cursor is the
// last id of the previous page.
func (f *fakeServer) listSandboxes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 2
	if s := q.Get("limit"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, sb := range f.sandboxes {
		if st := q.Get("state"); st != "" && string(sb.State) != st {
			continue
		}
		match := true
		for _, l := range q["label"] {
			k, v, _ := strings.Cut(l, "=")
			if sb.Labels[k] != v {
				match = false
			}
		}
		if match && id > q.Get("cursor") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := api.SandboxList{Sandboxes: []api.Sandbox{}}
	for i, id := range ids {
		if i == limit {
			out.NextCursor = ids[i-1]
			break
		}
		out.Sandboxes = append(out.Sandboxes, *f.sandboxes[id])
	}
	writeJSON(w, http.StatusOK, out)
}

// execStream sends "hello " on stdout, then (paced by streamStep) "oops"
// on stderr, then the exit event with the request's first argument as the
// exit code when it is a number.
func (f *fakeServer) execStream(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	_, ok := f.sandboxes[r.PathValue("id")]
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "sandbox_not_found", "sandbox "+r.PathValue("id")+" not found")
		return
	}
	var req api.ExecRequest
	if !decode(w, r, &req) {
		return
	}
	code := 0
	if len(req.Cmd) > 1 {
		code, _ = strconv.Atoi(req.Cmd[1])
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	events := []api.ExecEvent{
		{Type: api.ExecStdout, Data: []byte("hello ")},
		{Type: api.ExecStderr, Data: []byte("oops\xff")},
		{Type: api.ExecExit, Exit: &api.ExecResult{ExitCode: code}},
	}
	for i, ev := range events {
		if i > 0 && f.streamStep != nil {
			select {
			case <-f.streamStep:
			case <-r.Context().Done():
				return
			}
		}
		enc.Encode(ev)
		w.(http.Flusher).Flush()
	}
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, api.Error{Error: api.ErrorBody{Code: code, Message: msg}})
}
