package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
)

const testAppID = "01m81b6tzw5q2hcj7by01dvd6v"

// appServer is a fake of the apps routes the CLI calls: one app, blog,
// whose tasks end with taskStatus.
type appServer struct {
	recorder
	taskStatus string
}

func newAppServer(t *testing.T) *appServer {
	t.Helper()
	s := &appServer{taskStatus: api.TaskSucceeded}
	mux := http.NewServeMux()
	app := api.App{ID: testAppID, Name: "blog", State: api.AppReady, URL: "http://blog.apps.test/"}
	mux.HandleFunc("GET /v1/apps", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.AppList{Apps: []api.App{app}})
	})
	mux.HandleFunc("POST /v1/apps", func(w http.ResponseWriter, r *http.Request) {
		var req api.CreateAppRequest
		json.NewDecoder(r.Body).Decode(&req)
		writeTestJSON(w, http.StatusCreated, api.App{ID: testAppID, Name: req.Name, State: api.AppCreating})
	})
	s.handleApp(mux, "GET /v1/apps/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, app)
	})
	s.handleApp(mux, "DELETE /v1/apps/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	s.handleApp(mux, "POST /v1/apps/{id}/tasks", func(w http.ResponseWriter, r *http.Request) {
		var req api.CreateTaskRequest
		json.NewDecoder(r.Body).Decode(&req)
		writeTestJSON(w, http.StatusCreated, api.Task{ID: "t1", AppID: testAppID, Status: api.TaskQueued, Command: req.Command})
	})
	s.handleApp(mux, "GET /v1/apps/{id}/tasks/{task}/log", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, l := range []struct{ stream, text string }{{"stdout", "built\n"}, {"stderr", "warning\n"}, {"system", "build check: npm run build\n"}} {
			b, _ := json.Marshal(map[string]string{"stream": l.stream, "text": l.text})
			fmt.Fprintf(w, "id: %d\nevent: log\ndata: %s\n\n", i+1, b)
		}
		code := 0
		if s.taskStatus != api.TaskSucceeded {
			code = 2
		}
		b, _ := json.Marshal(api.Task{ID: "t1", AppID: testAppID, Status: s.taskStatus, ExitCode: &code, Checkpoint: "c1",
			BuildStatus: api.BuildPassed, PreviewOK: true, DurationMS: 1500,
			FilesChanged: []api.FileChange{{Path: "src/a.js", Change: "modified"}, {Path: "b.txt", Change: "added"}}})
		fmt.Fprintf(w, "event: end\ndata: %s\n\n", b)
	})
	s.handleApp(mux, "GET /v1/apps/{id}/processes/{name}/logs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintln(w, `{"time":"2025-06-01T12:00:00Z","stream":"stdout","line":"listening on 3000"}`)
		fmt.Fprintln(w, `{"time":"2025-06-01T12:00:01Z","stream":"stderr","line":"oops"}`)
		fmt.Fprintln(w, `{"time":"2025-06-01T12:00:02Z","stream":"system","line":"restarted"}`)
	})
	s.handleApp(mux, "POST /v1/apps/{id}/config", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusConflict, api.Error{Error: api.ErrorBody{Code: "config_exists", Message: "exists"}})
	})
	s.handleApp(mux, "PATCH /v1/apps/{id}/config/{key}", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.ConfigEntry{Key: r.PathValue("key"), Access: api.AccessRuntime, Sensitive: true})
	})
	s.handleApp(mux, "POST /v1/apps/{id}/undo", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, http.StatusOK, api.UndoResult{Restored: api.Checkpoint{ID: "c1"}, PreUndo: api.Checkpoint{ID: "c2"}})
	})
	s.serve(t, mux)
	return s
}

// handleApp serves h for the one app's id; any other is app_not_found.
func (s *appServer) handleApp(mux *http.ServeMux, pattern string, h http.HandlerFunc) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != testAppID {
			writeTestJSON(w, http.StatusNotFound, api.Error{Error: api.ErrorBody{Code: "app_not_found", Message: "no app"}})
			return
		}
		h(w, r)
	})
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// TestAppResolve: an id is used without a look-up, a name through the
// list, and an unknown name is app_not_found.
func TestAppResolve(t *testing.T) {
	s := newAppServer(t)
	for _, tc := range []struct {
		ref      string
		code     int
		requests []string
	}{
		{testAppID, 0, []string{"GET /v1/apps/" + testAppID}},
		{"blog", 0, []string{"GET /v1/apps"}},
		{"nope", 1, []string{"GET /v1/apps"}},
		{"01m81b6tzw5q2hcj7by01dvd6w", 1, []string{"GET /v1/apps/01m81b6tzw5q2hcj7by01dvd6w"}},
	} {
		out, errOut, code, reqs := s.run("", "app", "get", tc.ref)
		if code != tc.code {
			t.Errorf("app get %s: exit %d, want %d; stderr %q", tc.ref, code, tc.code, errOut)
		}
		if diff := cmp.Diff(tc.requests, reqs); diff != "" {
			t.Errorf("app get %s: requests (-want +got):\n%s", tc.ref, diff)
		}
		if code == 0 && !strings.Contains(out, testAppID) {
			t.Errorf("app get %s: stdout %q", tc.ref, out)
		}
		if code != 0 && !strings.Contains(errOut, "app_not_found") {
			t.Errorf("app get %s: stderr %q, want app_not_found", tc.ref, errOut)
		}
	}
	if _, errOut, code, reqs := s.run("", "app", "rm", "blog"); code != 0 || len(reqs) != 2 || reqs[1] != "DELETE /v1/apps/"+testAppID {
		t.Errorf("app rm blog: exit %d, requests %q, stderr %q", code, reqs, errOut)
	}
}

// TestAppTask: the command after the app (with or without --) is the
// task's; the log goes out by stream; the summary says what changed; the
// exit status says whether the task succeeded.
func TestAppTask(t *testing.T) {
	s := newAppServer(t)
	for _, args := range [][]string{
		{"app", "task", "--timeout", "30", "-m", "build it", "blog", "--", "npm", "run", "build", "--prod"},
		{"app", "task", "blog", "--timeout", "30", "--message", "build it", "npm", "run", "build", "--prod"},
	} {
		out, errOut, code, reqs := s.run("", args...)
		if code != 0 {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
		}
		if out != "built\n" {
			t.Errorf("%q: stdout %q, want the task's stdout", args, out)
		}
		for _, want := range []string{"warning\n", "hutch: build check: npm run build\n", "task t1 succeeded in 1.5s (exit 0)",
			"build passed, preview ok, app unhealthy", "  M src/a.js\n  A b.txt\n", "hutch app undo blog --to c1"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%q: stderr %q lacks %q", args, errOut, want)
			}
		}
		want := []string{"GET /v1/apps",
			"POST /v1/apps/" + testAppID + `/tasks {"command":["npm","run","build","--prod"],"timeout_s":30,"message":"build it"}`,
			"GET /v1/apps/" + testAppID + "/tasks/t1/log"}
		if diff := cmp.Diff(want, reqs); diff != "" {
			t.Errorf("%q: requests (-want +got):\n%s", args, diff)
		}
	}

	s.taskStatus = api.TaskFailed
	if _, errOut, code, _ := s.run("", "app", "task", testAppID, "false"); code != 1 || !strings.Contains(errOut, "task t1 failed") {
		t.Errorf("a failed task: exit %d, stderr %q; want 1", code, errOut)
	}
	out, _, code, _ := s.run("", "app", "task", "--json", testAppID, "false")
	var task api.Task
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.Status != api.TaskFailed || code != 1 {
		t.Errorf("app task --json: exit %d, stdout %q (%v)", code, out, err)
	}
	out, _, code, reqs := s.run("", "app", "task", "--no-follow", testAppID, "sleep", "9")
	if code != 0 || out != "t1\n" || len(reqs) != 1 {
		t.Errorf("app task --no-follow: exit %d, stdout %q, requests %q", code, out, reqs)
	}
}

func TestAppCreateWait(t *testing.T) {
	s := newAppServer(t)
	out, errOut, code, reqs := s.run("", "app", "create", "blog", "--preset", "static", "--public", "--wait")
	want := []string{`POST /v1/apps {"name":"blog","preset":"static","public":true}`, "GET /v1/apps/" + testAppID}
	if code != 0 || out != testAppID+"\n" || !strings.Contains(errOut, "app blog ready: http://blog.apps.test/") {
		t.Errorf("app create --wait: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff(want, reqs); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestAppLogs(t *testing.T) {
	s := newAppServer(t)
	out, errOut, code, reqs := s.run("", "app", "logs", "-f", "--role", "live", "--tail", "5", "blog", "web")
	if code != 0 || out != "listening on 3000\n" || errOut != "oops\n[system] restarted\n" {
		t.Errorf("app logs: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if len(reqs) != 2 || reqs[1] != "GET /v1/apps/"+testAppID+"/processes/web/logs?follow=true&role=live&tail=5" {
		t.Errorf("app logs: requests %q", reqs)
	}
}

// TestAppConfigSet: KEY=VALUE or KEY with the value on stdin; create
// falls back to a change that sends only what the flags say.
func TestAppConfigSet(t *testing.T) {
	s := newAppServer(t)
	base := "/v1/apps/" + testAppID + "/config"
	for _, tc := range []struct {
		stdin string
		args  []string
		key   string
		patch string
	}{
		{"", []string{"blog", "DB_URL=postgres://x?a=b", "--access", "runtime"}, "DB_URL", `{"value":"postgres://x?a=b","access":"runtime"}`},
		{"s3cret\n", []string{"--sensitive", "blog", "TOKEN"}, "TOKEN", `{"value":"s3cret","sensitive":true}`},
		{"", []string{"blog", "EMPTY="}, "EMPTY", `{"value":""}`},
	} {
		out, errOut, code, reqs := s.run(tc.stdin, append([]string{"app", "config", "set"}, tc.args...)...)
		key := tc.key
		if code != 0 || out != key+"\n" {
			t.Errorf("config set %q: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
			continue
		}
		if len(reqs) != 3 || !strings.HasPrefix(reqs[1], "POST "+base+" ") || reqs[2] != "PATCH "+base+"/"+key+" "+tc.patch {
			t.Errorf("config set %q: requests %q; want a PATCH with %s", tc.args, reqs, tc.patch)
		}
	}
}

func TestParseConfigPair(t *testing.T) {
	for _, tc := range []struct {
		in         string
		key, value string
		ok, err    bool
	}{
		{"A=1", "A", "1", true, false},
		{"A=b=c", "A", "b=c", true, false},
		{"A=", "A", "", true, false},
		{"A", "A", "", false, false},
		{"=x", "", "", false, true},
		{"", "", "", false, true},
	} {
		k, v, ok, err := parseConfigPair(tc.in)
		if k != tc.key || v != tc.value || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("parseConfigPair(%q) = %q, %q, %v, %v", tc.in, k, v, ok, err)
		}
	}
}

func TestAppUndo(t *testing.T) {
	s := newAppServer(t)
	for args, body := range map[string]string{"": `{}`, "--steps 3": `{"steps":3}`, "--to c9": `{"checkpoint":"c9"}`} {
		out, errOut, code, reqs := s.run("", append(append([]string{"app", "undo"}, strings.Fields(args)...), testAppID)...)
		want := "POST /v1/apps/" + testAppID + "/undo " + body
		if code != 0 || out != "c1\n" || len(reqs) != 1 || reqs[0] != want || !strings.Contains(errOut, "--to c2") {
			t.Errorf("app undo %s: exit %d, stdout %q, stderr %q, requests %q; want %s", args, code, out, errOut, reqs, want)
		}
	}
}

func TestAppUsageErrors(t *testing.T) {
	s := newAppServer(t)
	for _, args := range [][]string{
		{"app"},
		{"app", "frobnicate"},
		{"app", "create", "blog"},
		{"app", "create", "--preset", "node"},
		{"app", "task", "blog"},
		{"app", "task", "--timeout", "-1", "blog", "ls"},
		{"app", "undo", "--steps", "2", "--to", "c1", "blog"},
		{"app", "undo"},
		{"app", "logs", "blog"},
		{"app", "config"},
		{"app", "config", "set", "blog"},
		{"app", "config", "set", "blog", "=v"},
		{"app", "config", "rm", "blog"},
		{"app", "get", "a", "b"},
	} {
		if _, _, code, reqs := s.run("", args...); code != 2 || len(reqs) != 0 {
			t.Errorf("hutch %q: exit %d after %d requests, want 2 and none", args, code, len(reqs))
		}
	}
}

func TestPrintTaskSummary(t *testing.T) {
	var b strings.Builder
	printTaskSummary(&b, &api.Task{ID: "t9", Status: api.TaskCancelled, Error: "cancelled\nby you", DurationMS: int64(2 * time.Second / time.Millisecond),
		BuildStatus: api.BuildSkipped, FilesChanged: []api.FileChange{}}, "blog")
	want := "hutch: task t9 cancelled in 2s: cancelled by you\nhutch: build skipped, preview failing, app unhealthy\nhutch: no files changed\n"
	if b.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
}
