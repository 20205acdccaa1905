package e2e

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestAppTasks: one task at a time per app, cancel and timeout, a log
// that resumes after the chunk a client saw, undo of deletions and binary
// files, a manifest made invalid (the last good one runs on and the error
// names the line), and history, pointers and routes kept across a restart
// of the control plane.
func TestAppTasks(t *testing.T) {
	s := startServer(t, "")
	a := createApp(t, s, api.CreateAppRequest{Name: "tasks", Preset: "static"}, 2*time.Minute)
	base := "/v1/apps/" + a.ID

	// A long task holds the app: a second is refused; cancel ends it.
	var long api.Task
	mustCall(t, s, "POST", base+"/tasks", api.CreateTaskRequest{Command: []string{"sleep", "60"}}, &long, http.StatusCreated)
	t.Log("expecting two refusals:")
	if st, code := call(t, s.url, s.key, "POST", base+"/tasks", api.CreateTaskRequest{Command: []string{"true"}}, nil); st != 409 || code != "task_running" {
		t.Fatalf("second task: %d %s, want 409 task_running", st, code)
	}
	if st, code := call(t, s.url, s.key, "POST", base+"/undo", api.UndoRequest{}, nil); st != 409 || code != "task_running" {
		t.Fatalf("undo while a task runs: %d %s", st, code)
	}
	waitFor(t, "the task running", 30*time.Second, func() bool {
		mustCall(t, s, "GET", base+"/tasks/"+long.ID, nil, &long, http.StatusOK)
		return long.Status == api.TaskRunning
	})
	mustCall(t, s, "POST", base+"/tasks/"+long.ID+"/cancel", nil, nil, http.StatusOK)
	// Well before the command's own 60 s: the cancel killed it.
	waitFor(t, "the task cancelled", 30*time.Second, func() bool {
		mustCall(t, s, "GET", base+"/tasks/"+long.ID, nil, &long, http.StatusOK)
		return long.Status == api.TaskCancelled
	})
	// A timeout kills the command and fails the task.
	var slow api.Task
	mustCall(t, s, "POST", base+"/tasks", api.CreateTaskRequest{Command: []string{"sleep", "60"}, TimeoutS: 1}, &slow, http.StatusCreated)
	waitFor(t, "the timed-out task", time.Minute, func() bool {
		mustCall(t, s, "GET", base+"/tasks/"+slow.ID, nil, &slow, http.StatusOK)
		return slow.EndedAt != nil
	})
	if slow.Status != api.TaskFailed || slow.ExitCode == nil || *slow.ExitCode == 0 {
		t.Errorf("timed-out task: %+v", slow)
	}

	// A task that deletes a file, writes a binary one and changes another;
	// its log comes as SSE and resumes after a chunk.
	task := runTask(t, s, a.ID, "sh", "-c",
		"rm public/style.css && head -c 4096 /dev/urandom > public/blob.bin && echo changed > public/app.js && for i in 1 2 3; do echo line$i; sleep 0.3; done")
	if task.Status != api.TaskSucceeded || len(task.FilesChanged) != 3 {
		t.Fatalf("task: %+v", task)
	}
	ids, body := taskLog(t, s, base+"/tasks/"+task.ID+"/log", "")
	if len(ids) < 2 || !strings.Contains(body, "line3") || !strings.Contains(body, "event: end") {
		t.Fatalf("task log (%v):\n%s", ids, body)
	}
	rest, body2 := taskLog(t, s, base+"/tasks/"+task.ID+"/log", ids[0])
	if len(rest) != len(ids)-1 || strings.Contains(body2, "id: "+ids[0]+"\n") {
		t.Errorf("resumed after %s: got chunks %v of %v", ids[0], rest, ids)
	}

	// An invalid manifest: the last good one runs on, the error names the line.
	bad := runTask(t, s, a.ID, "sh", "-c", "printf 'version: 1\\nweb:\\n  command: node dev-server.mjs\\n  port: nope\\n' > sandbox.yaml")
	if _, log := taskLog(t, s, base+"/tasks/"+bad.ID+"/log", ""); !strings.Contains(log, "the last good manifest runs on") || !strings.Contains(log, "web.port") {
		t.Errorf("the task's log does not say the manifest was not taken:\n%s", log)
	}
	var ps api.AppProcesses
	mustCall(t, s, "GET", base+"/processes", nil, &ps, http.StatusOK)
	if !strings.Contains(ps.ManifestError, ":4:") || !strings.Contains(ps.ManifestError, "web.port") ||
		len(ps.Processes) != 1 || ps.Processes[0].State != api.AppProcessRunning {
		t.Errorf("invalid manifest: %+v", ps)
	}

	// Undo twice: before the manifest task, then before the file task.
	var undo api.UndoResult
	mustCall(t, s, "POST", base+"/undo", api.UndoRequest{Steps: 2}, &undo, http.StatusOK)
	if undo.Restored.ID != task.Checkpoint {
		t.Fatalf("undo steps 2 restored %s, want %s", undo.Restored.ID, task.Checkpoint)
	}
	c := s.client()
	for _, gone := range []string{"public/blob.bin"} {
		if _, err := c.StatFile(t.Context(), a.Dev, "/workspace/"+gone); err == nil {
			t.Errorf("%s is back after the undo", gone)
		}
	}
	if css, err := readFile(t.Context(), c, a.Dev, "/workspace/public/style.css"); err != nil || css == "" {
		t.Errorf("style.css after the undo: %q %v", css, err)
	}
	var fixed api.AppProcesses // a new one: the field is left out when empty
	mustCall(t, s, "GET", base+"/processes", nil, &fixed, http.StatusOK)
	if fixed.ManifestError != "" {
		t.Errorf("the manifest is still invalid after the undo: %s", fixed.ManifestError)
	}

	// A dev whose web process keeps dying is not promoted: the answer
	// names the check, and live is untouched.
	runTask(t, s, a.ID, "sh", "-c", "printf 'version: 1\nweb:\n  command: exit 3\n  port: 8080\n' > sandbox.yaml")
	var app api.App
	mustCall(t, s, "GET", base, nil, &app, http.StatusOK)
	st, code := call(t, s.url, s.key, "POST", base+"/promote", struct{}{}, nil)
	var still api.App
	mustCall(t, s, "GET", base, nil, &still, http.StatusOK)
	if st != http.StatusConflict || code != "promotion_check_failed" || still.Live != app.Live || still.PreviousLive != "" {
		t.Errorf("promoting a crashing dev: %d %s; live %s (was %s)", st, code, still.Live, app.Live)
	}
	mustCall(t, s, "POST", base+"/undo", api.UndoRequest{}, nil, http.StatusOK)

	// The history is beyond the sandbox's user: it cannot list, read or
	// plant anything there, so an undo restores what was checkpointed.
	res, err := c.Exec(t.Context(), a.Dev, api.ExecRequest{Cmd: []string{"sh", "-c",
		"ls /.hutch-history; find /.hutch-history -type f | head -1; touch /.hutch-history/x; echo done"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stderr, "Permission denied") || strings.Contains(res.Stdout, "checkpoints") || strings.Count(res.Stderr, "Permission denied") < 3 {
		t.Errorf("the sandbox's user reached the history store: %+v", res)
	}

	// A restart of the control plane keeps the history and the pointers,
	// and the app answers again.
	var before api.CheckpointList
	mustCall(t, s, "GET", base+"/checkpoints", nil, &before, http.StatusOK)
	s.stop(false)
	s = startServer(t, s.dataDir)
	var after api.CheckpointList
	mustCall(t, s, "GET", base+"/checkpoints", nil, &after, http.StatusOK)
	if len(after.Checkpoints) != len(before.Checkpoints) || len(after.Checkpoints) < 4 {
		t.Errorf("checkpoints: %d before the restart, %d after", len(before.Checkpoints), len(after.Checkpoints))
	}
	auth := map[string]string{"Authorization": "Bearer " + s.key}
	waitFor(t, "the app after a restart", time.Minute, func() bool {
		st, _, _ := appGet(t, s, "tasks", "/dev/style.css", auth)
		return st == 200
	})
	mustCall(t, s, "POST", base+"/undo", api.UndoRequest{Checkpoint: undo.PreUndo.ID}, &undo, http.StatusOK)
	if _, err := s.client().StatFile(t.Context(), a.Dev, "/workspace/public/blob.bin"); err != nil {
		t.Errorf("undo of the undo did not bring blob.bin back: %v", err)
	}
}

// taskLog reads a task's whole log as SSE, after chunk after ("" from the
// start), and returns the chunk ids and the raw stream.
func taskLog(t *testing.T, s *server, path, after string) ([]string, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Accept", "text/event-stream")
	if after != "" {
		req.Header.Set("Last-Event-ID", after)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ids []string
	var raw strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		raw.WriteString(line + "\n")
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			if _, err := strconv.Atoi(id); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids, raw.String()
}

// TestAppCreateCutShort: an app whose create a crash of the control plane
// cut short (SIGKILL during its preset's npm install) is failed after the
// restart, with the reason, and keeps no sandbox; a graceful stop during a
// create does the same before it exits.
func TestAppCreateCutShort(t *testing.T) {
	for _, graceful := range []bool{false, true} {
		s := startServer(t, "")
		var a api.App
		mustCall(t, s, "POST", "/v1/apps", api.CreateAppRequest{Name: "cut", Preset: "react-vite"}, &a, http.StatusCreated)
		waitFor(t, "the dev sandbox", time.Minute, func() bool {
			mustCall(t, s, "GET", "/v1/apps/"+a.ID, nil, &a, http.StatusOK)
			return a.Dev != ""
		})
		dev := a.Dev
		if graceful {
			s.stop(false)
		} else {
			s.kill()
		}
		s = startServer(t, s.dataDir)
		var after api.App // a new one: empty pointers are left out
		mustCall(t, s, "GET", "/v1/apps/"+a.ID, nil, &after, http.StatusOK)
		if after.State != api.AppFailed || after.Error == "" || after.Dev != "" || after.Live != "" {
			t.Errorf("graceful %v: app after the restart: %+v", graceful, after)
		}
		var sb api.Sandbox
		mustCall(t, s, "GET", "/v1/sandboxes/"+dev, nil, &sb, http.StatusOK)
		if sb.State != api.StateDestroyed {
			t.Errorf("graceful %v: the dev sandbox is %s", graceful, sb.State)
		}
		mustCall(t, s, "DELETE", "/v1/apps/"+a.ID, nil, nil, http.StatusNoContent)
		s.stop(true)
	}
}

// TestAppOrphans: after a restart, a sandbox labelled as an app's that the
// app does not point at (what a crash between a fork and its record
// leaves) is destroyed; one whose label names no app of its tenant is the
// caller's own, and stays.
func TestAppOrphans(t *testing.T) {
	s := startServer(t, "")
	a := createApp(t, s, api.CreateAppRequest{Name: "orph", Preset: "static"}, 2*time.Minute)
	var orphan, mine api.Sandbox
	mustCall(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{Labels: map[string]string{"hutch.app": a.ID, "hutch.app.role": "live"}}, &orphan, http.StatusCreated)
	mustCall(t, s, "POST", "/v1/sandboxes", api.CreateSandboxRequest{Labels: map[string]string{"hutch.app": "01notanappofmine0000000000"}}, &mine, http.StatusCreated)
	// An app's own sandbox is not deleted on its own.
	if st, code := call(t, s.url, s.key, "DELETE", "/v1/sandboxes/"+a.Dev, nil, nil); st != 409 || code != "app_sandbox" {
		t.Errorf("deleting the dev sandbox: %d %s, want 409 app_sandbox", st, code)
	}
	s.stop(false)
	s = startServer(t, s.dataDir)
	for _, tc := range []struct {
		id   string
		want api.SandboxState
	}{{orphan.ID, api.StateDestroyed}, {mine.ID, api.StateRunning}, {a.Live, api.StateRunning}, {a.Dev, api.StateRunning}} {
		var sb api.Sandbox
		mustCall(t, s, "GET", "/v1/sandboxes/"+tc.id, nil, &sb, http.StatusOK)
		if sb.State != tc.want {
			t.Errorf("sandbox %s after the restart: %s, want %s", tc.id, sb.State, tc.want)
		}
	}
}
