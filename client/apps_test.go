package client_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// appRequest is what the apps server saw of one request.
type appRequest struct {
	Method, Path, RawQuery, Accept, Body string
}

// newAppServer serves h and records each request's method, escaped path,
// query and body.
func newAppServer(t *testing.T, h http.HandlerFunc) (*client.Client, func() []appRequest) {
	t.Helper()
	var (
		mu   sync.Mutex
		reqs []appRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, appRequest{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Accept"), string(b)})
		mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return client.New(srv.URL, testKey), func() []appRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]appRequest(nil), reqs...)
	}
}

// TestAppCalls holds each call to its method, path, query and body.
func TestAppCalls(t *testing.T) {
	c, seen := newAppServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/v1/presets":
			writeJSON(w, http.StatusOK, map[string]any{"presets": []api.Preset{{Name: "node", Template: "node"}}})
		default:
			writeJSON(w, http.StatusOK, map[string]any{})
		}
	})
	ctx := t.Context()
	pub := true
	calls := []struct {
		call func() error
		want appRequest
	}{
		{func() error {
			_, err := c.CreateApp(ctx, api.CreateAppRequest{Name: "blog", Preset: "node"})
			return err
		},
			appRequest{"POST", "/v1/apps", "", "", `{"name":"blog","preset":"node"}`}},
		{func() error { _, err := c.Apps(ctx); return err }, appRequest{"GET", "/v1/apps", "", "", ""}},
		{func() error { _, err := c.App(ctx, "a1"); return err }, appRequest{"GET", "/v1/apps/a1", "", "", ""}},
		{func() error { _, err := c.PatchApp(ctx, "a1", api.PatchAppRequest{Public: &pub}); return err },
			appRequest{"PATCH", "/v1/apps/a1", "", "", `{"public":true}`}},
		{func() error { return c.DeleteApp(ctx, "a1") }, appRequest{"DELETE", "/v1/apps/a1", "", "", ""}},
		{func() error {
			p, err := c.Presets(ctx)
			if err == nil && (len(p) != 1 || p[0].Name != "node") {
				err = fmt.Errorf("presets %+v", p)
			}
			return err
		}, appRequest{"GET", "/v1/presets", "", "", ""}},
		{func() error { _, err := c.Promote(ctx, "a1"); return err }, appRequest{"POST", "/v1/apps/a1/promote", "", "", `{}`}},
		{func() error { _, err := c.Rollback(ctx, "a1"); return err }, appRequest{"POST", "/v1/apps/a1/rollback", "", "", `{}`}},
		{func() error { _, err := c.Undo(ctx, "a1", api.UndoRequest{Steps: 2}); return err },
			appRequest{"POST", "/v1/apps/a1/undo", "", "", `{"steps":2}`}},
		{func() error { _, err := c.Checkpoint(ctx, "a1", api.CreateCheckpointRequest{Message: "m"}); return err },
			appRequest{"POST", "/v1/apps/a1/checkpoints", "", "", `{"message":"m"}`}},
		{func() error { _, err := c.Checkpoints(ctx, "a1"); return err }, appRequest{"GET", "/v1/apps/a1/checkpoints", "", "", ""}},
		{func() error {
			_, err := c.CreateTask(ctx, "a1", api.CreateTaskRequest{Command: []string{"npm", "test"}, TimeoutS: 60})
			return err
		}, appRequest{"POST", "/v1/apps/a1/tasks", "", "", `{"command":["npm","test"],"timeout_s":60}`}},
		{func() error { _, err := c.Tasks(ctx, "a1", 5); return err }, appRequest{"GET", "/v1/apps/a1/tasks", "limit=5", "", ""}},
		{func() error { _, err := c.Task(ctx, "a1", "t1"); return err }, appRequest{"GET", "/v1/apps/a1/tasks/t1", "", "", ""}},
		{func() error { _, err := c.CancelTask(ctx, "a1", "t1"); return err }, appRequest{"POST", "/v1/apps/a1/tasks/t1/cancel", "", "", ""}},
		{func() error { _, err := c.AppProcesses(ctx, "a1", api.RoleLive); return err },
			appRequest{"GET", "/v1/apps/a1/processes", "role=live", "", ""}},
		{func() error {
			body, err := c.AppLogs(ctx, "a1", api.RoleDev, "web server", 20, true)
			if err == nil {
				body.Close()
			}
			return err
		}, appRequest{"GET", "/v1/apps/a1/processes/web%20server/logs", "follow=true&role=dev&tail=20", "application/x-ndjson", ""}},
		{func() error { _, err := c.Config(ctx, "a1"); return err }, appRequest{"GET", "/v1/apps/a1/config", "", "", ""}},
		{func() error {
			v := "x"
			_, err := c.CreateConfig(ctx, "a1", api.SetConfigRequest{Key: "K", Value: &v, Access: api.AccessRuntime})
			return err
		}, appRequest{"POST", "/v1/apps/a1/config", "", "", `{"key":"K","value":"x","access":"runtime"}`}},
		{func() error {
			v := "y"
			_, err := c.PatchConfig(ctx, "a1", "K/2", api.SetConfigRequest{Key: "K/2", Value: &v})
			return err
		}, appRequest{"PATCH", "/v1/apps/a1/config/K%2F2", "", "", `{"value":"y"}`}},
		{func() error { return c.DeleteConfig(ctx, "a1", "K") }, appRequest{"DELETE", "/v1/apps/a1/config/K", "", "", ""}},
		{func() error {
			_, err := c.AppEvents(ctx, "a1", client.EventQuery{Types: []string{api.EventTaskFailed}, After: "e9", Limit: 10})
			return err
		}, appRequest{"GET", "/v1/apps/a1/events", "after=e9&limit=10&type=task.failed", "", ""}},
	}
	for i, tc := range calls {
		if err := tc.call(); err != nil {
			t.Fatalf("call %d (%s %s): %v", i, tc.want.Method, tc.want.Path, err)
		}
		reqs := seen()
		got := reqs[len(reqs)-1]
		if tc.want.Accept == "" {
			got.Accept = ""
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("call %d (-want +got):\n%s", i, diff)
		}
	}
	if len(seen()) != len(calls) {
		t.Errorf("%d requests for %d calls", len(seen()), len(calls))
	}
}

func TestAppCallsRefuseEmptyIDs(t *testing.T) {
	c, seen := newAppServer(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("request %s %s", r.Method, r.URL) })
	ctx := t.Context()
	for i, err := range []error{
		func() error { _, err := c.App(ctx, ""); return err }(),
		func() error { _, err := c.Task(ctx, "a1", ""); return err }(),
		func() error { _, err := c.TaskLog(ctx, "", "t1", 0, nil); return err }(),
		func() error { _, err := c.CreateConfig(ctx, "a1", api.SetConfigRequest{}); return err }(),
		func() error { _, err := c.PatchConfig(ctx, "a1", "A", api.SetConfigRequest{Key: "B"}); return err }(),
		func() error { _, err := c.AppEvents(ctx, "a1", client.EventQuery{SandboxID: "s"}); return err }(),
		c.DeleteConfig(ctx, "a1", ""),
	} {
		if err == nil {
			t.Errorf("call %d succeeded", i)
		}
	}
	if n := len(seen()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestSetConfigFallsBackToPatch: SetConfig creates, and on config_exists
// patches the key with what the request sets.
func TestSetConfigFallsBackToPatch(t *testing.T) {
	c, seen := newAppServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			writeError(w, http.StatusConflict, "config_exists", "exists")
			return
		}
		writeJSON(w, http.StatusOK, api.ConfigEntry{Key: "K", Value: "v2", Access: api.AccessBoth})
	})
	v := "v2"
	got, err := c.SetConfig(t.Context(), "a1", api.SetConfigRequest{Key: "K", Value: &v})
	if err != nil || got.Value != "v2" {
		t.Fatalf("SetConfig = %+v, %v", got, err)
	}
	want := []appRequest{
		{"POST", "/v1/apps/a1/config", "", "application/json", `{"key":"K","value":"v2"}`},
		{"PATCH", "/v1/apps/a1/config/K", "", "application/json", `{"value":"v2"}`},
	}
	if diff := cmp.Diff(want, seen()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// taskLogServer serves a task log of chunks: the first request breaks
// after breakAfter chunks (no end event), later ones resume after their
// after parameter and end with the task.
func taskLogServer(t *testing.T, chunks []client.TaskLogEntry, breakAfter int) (*client.Client, func() []appRequest) {
	first := true
	var mu sync.Mutex
	return newAppServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/apps/a1/tasks/t1/log" {
			writeError(w, http.StatusNotFound, "task_not_found", "no")
			return
		}
		mu.Lock()
		broken := first
		first = false
		mu.Unlock()
		var after int64
		fmt.Sscan(r.URL.Query().Get("after"), &after)
		w.Header().Set("Content-Type", "text/event-stream")
		bw := bufio.NewWriter(w)
		n := 0
		for _, ch := range chunks {
			if ch.Seq <= after {
				continue
			}
			if broken && n == breakAfter {
				bw.Flush()
				return
			}
			b, _ := json.Marshal(ch)
			fmt.Fprintf(bw, ": keepalive\n\nid: %d\nevent: log\ndata: %s\n\n", ch.Seq, b)
			n++
		}
		code := 0
		b, _ := json.Marshal(api.Task{ID: "t1", AppID: "a1", Status: api.TaskSucceeded, ExitCode: &code})
		fmt.Fprintf(bw, "event: end\ndata: %s\n\n", b)
		bw.Flush()
	})
}

func TestTaskLogResumes(t *testing.T) {
	chunks := []client.TaskLogEntry{
		{Seq: 1, Stream: client.TaskLogStdout, Text: "one\n"},
		{Seq: 2, Stream: client.TaskLogStderr, Text: "two\n"},
		{Seq: 3, Stream: client.TaskLogSystem, Text: "build check: npm run build\n"},
	}
	c, seen := taskLogServer(t, chunks, 2)
	var got []client.TaskLogEntry
	task, err := c.TaskLog(t.Context(), "a1", "t1", 0, func(e client.TaskLogEntry) error {
		got = append(got, e)
		return nil
	})
	if err != nil || task.Status != api.TaskSucceeded || task.ExitCode == nil || *task.ExitCode != 0 {
		t.Fatalf("TaskLog = %+v, %v", task, err)
	}
	if diff := cmp.Diff(chunks, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	reqs := seen()
	if len(reqs) != 2 || reqs[0].RawQuery != "" || reqs[1].RawQuery != "after=2" || reqs[0].Accept != "text/event-stream" {
		t.Errorf("requests %+v: want a first from the start, a second after=2", reqs)
	}
}

func TestTaskLogStopsOnCallbackError(t *testing.T) {
	c, seen := taskLogServer(t, []client.TaskLogEntry{{Seq: 5, Stream: "stdout", Text: "x"}, {Seq: 6, Stream: "stdout", Text: "y"}}, 1)
	stop := errors.New("stop")
	_, err := c.TaskLog(t.Context(), "a1", "t1", 4, func(client.TaskLogEntry) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("TaskLog = %v, want the callback's error", err)
	}
	if reqs := seen(); len(reqs) != 1 || reqs[0].RawQuery != "after=4" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestTaskLogNotFoundIsFinal(t *testing.T) {
	c, seen := taskLogServer(t, nil, 0)
	_, err := c.TaskLog(t.Context(), "a1", "nope", 0, func(client.TaskLogEntry) error { return nil })
	if !client.IsNotFound(err) || len(seen()) != 1 {
		t.Fatalf("TaskLog of an unknown task = %v after %d requests; want one 404", err, len(seen()))
	}
}

func TestWaitTask(t *testing.T) {
	n := 0
	c, _ := newAppServer(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		st := api.TaskRunning
		if n == 3 {
			st = api.TaskFailed
		}
		writeJSON(w, http.StatusOK, api.Task{ID: "t1", Status: st})
	})
	task, err := c.WaitTask(t.Context(), "a1", "t1")
	if err != nil || task.Status != api.TaskFailed || n != 3 {
		t.Fatalf("WaitTask = %+v, %v after %d polls", task, err, n)
	}
}
