package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestAppPresets boots an app from each preset react-vite does not cover
// (TestAppReactVite does) and checks its dev preview through the /dev
// route, hot reload after a task's edit, its health path, and the
// supervisor's view of its processes and their logs.
func TestAppPresets(t *testing.T) {
	s := startServer(t, "")
	auth := map[string]string{"Authorization": "Bearer " + s.key}
	for _, tc := range []struct {
		preset, file, health string
		needs                []string // commands inside the sandbox (the host's userland)
	}{
		{"node-express", "server.js", "/dev/api/health", []string{"node", "npm"}},
		{"python-fastapi", "main.py", "/dev/api/health", []string{"python3"}},
		{"static", "public/index.html", "/dev/", []string{"node"}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			for _, c := range tc.needs {
				if _, err := exec.LookPath(c); err != nil {
					t.Skipf("%s needs %s on the host (its default template is the host's userland)", tc.preset, c)
				}
			}
			if tc.preset == "python-fastapi" && exec.Command("/usr/bin/python3", "-c", "import fastapi, uvicorn").Run() != nil {
				t.Skip("python-fastapi needs Debian's python3-fastapi and python3-uvicorn (apt-get install python3-fastapi python3-uvicorn)")
			}
			name := strings.ReplaceAll(tc.preset, "-", "")
			a := createApp(t, s, api.CreateAppRequest{Name: name, Preset: tc.preset}, 3*time.Minute)
			waitFor(t, tc.preset+" dev preview", time.Minute, func() bool {
				st, body, _ := appGet(t, s, name, "/dev/", auth)
				return st == 200 && strings.Contains(body, "Hello from hutch")
			})
			if st, _, _ := appGet(t, s, name, tc.health, auth); st != 200 {
				t.Fatalf("%s: %d", tc.health, st)
			}
			task := runTask(t, s, a.ID, "sed", "-i", "s/Hello from hutch/Hello reloaded/", tc.file)
			if task.Status != api.TaskSucceeded || !task.AppHealthy || task.BuildStatus == api.BuildFailed {
				t.Fatalf("task: %+v", task)
			}
			waitFor(t, tc.preset+" hot reload", time.Minute, func() bool {
				_, body, _ := appGet(t, s, name, "/dev/", auth)
				return strings.Contains(body, "Hello reloaded")
			})
			// Live is untouched until a promotion.
			if _, body, _ := appGet(t, s, name, "/", auth); !strings.Contains(body, "Hello from hutch") {
				t.Errorf("live changed with dev: %.200s", body)
			}
			var ps api.AppProcesses
			mustCall(t, s, "GET", "/v1/apps/"+a.ID+"/processes", nil, &ps, http.StatusOK)
			if len(ps.Processes) != 1 || ps.Processes[0].Name != "web" || ps.Processes[0].State != api.AppProcessRunning {
				t.Errorf("processes: %+v", ps)
			}
		})
	}

	// The worker preset runs no web process: its heartbeat is in its log.
	t.Run("worker", func(t *testing.T) {
		a := createApp(t, s, api.CreateAppRequest{Name: "worker", Preset: "worker"}, time.Minute)
		if st, body, _ := appGet(t, s, "worker", "/dev/", auth); st != http.StatusNotFound || !strings.Contains(body, "no_web_process") {
			t.Errorf("a worker's host: %d %.120s", st, body)
		}
		waitFor(t, "a heartbeat in the worker's log", time.Minute, func() bool {
			req, _ := http.NewRequest("GET", s.url+"/v1/apps/"+a.ID+"/processes/worker/logs?tail=50", nil)
			req.Header.Set("Authorization", "Bearer "+s.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				var l api.AppLogLine
				if json.Unmarshal(sc.Bytes(), &l) == nil && strings.Contains(l.Line, "heartbeat") {
					return true
				}
			}
			return false
		})
		// A task restarts it (restart_after_task).
		var before api.AppProcesses
		mustCall(t, s, "GET", "/v1/apps/"+a.ID+"/processes", nil, &before, http.StatusOK)
		runTask(t, s, a.ID, "true")
		var after api.AppProcesses
		mustCall(t, s, "GET", "/v1/apps/"+a.ID+"/processes", nil, &after, http.StatusOK)
		if len(after.Processes) != 1 || after.Processes[0].Pid == before.Processes[0].Pid {
			t.Errorf("the worker was not restarted after the task: %+v then %+v", before, after)
		}
	})
}
