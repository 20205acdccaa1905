package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestAppReactVite is the app builder's whole loop in a real browser: an
// app from the react-vite preset (npm install through the egress proxy),
// its dev preview behind /login, a task's edit shown by hot reload without
// a page reload, a task that breaks the app, undo, promotion to the live
// host, the dev page's HMR socket still on dev afterwards, rollback.
func TestAppReactVite(t *testing.T) {
	needBrowser(t)
	s := startServer(t, "")
	a := createApp(t, s, api.CreateAppRequest{Name: "shop", Preset: "react-vite"}, 5*time.Minute)
	auth := map[string]string{"Authorization": "Bearer " + s.key}
	u, _ := url.Parse(s.url)
	host := "http://shop.localhost:" + u.Port()
	if a.URL != host+"/" || a.DevURL != host+"/dev/" {
		t.Fatalf("app URLs %s and %s, want %s/ and /dev/", a.URL, a.DevURL, host)
	}

	// A browser without a session is sent to /login; signing in with a
	// key of the tenant lands on the dev page.
	b := startBrowser(t)
	var nav struct {
		Status int    `json:"status"`
		URL    string `json:"url"`
	}
	b.do(&nav, "goto", a.DevURL)
	if !strings.HasPrefix(nav.URL, host+"/login?next=") {
		t.Fatalf("unauthenticated dev page went to %s, want /login", nav.URL)
	}
	b.do(&nav, "login", s.key)
	if nav.URL != a.DevURL {
		t.Fatalf("after login the browser is at %s, want %s", nav.URL, a.DevURL)
	}
	var shown struct {
		Text   string `json:"text"`
		Marked bool   `json:"marked"`
	}
	b.do(&shown, "text", "#title", "Hello", "from", "hutch")
	b.do(nil, "mark")

	// A task edits the source: hot reload shows it without a reload.
	task := runTask(t, s, a.ID, "sh", "-c", "sed -i 's/Hello from hutch/Hello from a task/' src/App.jsx")
	if task.Status != api.TaskSucceeded || task.BuildStatus != api.BuildPassed || !task.AppHealthy || !task.PreviewOK ||
		!slices.Contains(task.FilesChanged, api.FileChange{Path: "src/App.jsx", Change: "modified"}) {
		t.Fatalf("edit task: %+v", task)
	}
	b.do(&shown, "text", "#title", "Hello", "from", "a", "task")
	if !shown.Marked {
		t.Fatal("the page reloaded: hot reload should have updated it in place")
	}

	// A task breaks the app: its config no longer parses, a source file
	// goes, and the dev server is restarted (Vite keeps a running server
	// when its config breaks; a new one will not start).
	task = runTask(t, s, a.ID, "sh", "-c", "echo 'export default {' > vite.config.js && rm src/index.css && pkill -f node_modules/.bin/vite")
	if task.AppHealthy || task.BuildStatus != api.BuildFailed {
		t.Fatalf("breaking task: healthy %v build %s, want unhealthy and failed", task.AppHealthy, task.BuildStatus)
	}
	// Undo restores the files exactly and restarts the crashed server.
	var undo api.UndoResult
	mustCall(t, s, "POST", "/v1/apps/"+a.ID+"/undo", api.UndoRequest{}, &undo, http.StatusOK)
	if undo.Restored.ID != task.Checkpoint {
		t.Fatalf("undo restored %s, want the task's checkpoint %s", undo.Restored.ID, task.Checkpoint)
	}
	waitFor(t, "the dev server back after undo", 2*time.Minute, func() bool {
		st, body, _ := appGet(t, s, "shop", "/dev/src/App.jsx", auth)
		return st == 200 && strings.Contains(body, "Hello from a task")
	})
	cssStatus, _, _ := appGet(t, s, "shop", "/dev/src/index.css", auth)
	if cssStatus != 200 {
		t.Fatalf("index.css after undo: %d", cssStatus)
	}

	// Live still serves the preset's page until the promotion.
	if st, body, _ := appGet(t, s, "shop", "/src/App.jsx", auth); st != 200 || !strings.Contains(body, "Hello from hutch") {
		t.Fatalf("live before promotion: %d %.200s", st, body)
	}
	var prom api.PromoteResult
	mustCall(t, s, "POST", "/v1/apps/"+a.ID+"/promote", struct{}{}, &prom, http.StatusOK)
	if prom.App.Live == a.Live || prom.App.PreviousLive != a.Live || prom.Snapshot == "" {
		t.Fatalf("promotion: %+v (live was %s)", prom, a.Live)
	}
	if st, body, _ := appGet(t, s, "shop", "/src/App.jsx", auth); st != 200 || !strings.Contains(body, "Hello from a task") {
		t.Fatalf("live after promotion: %d %.200s", st, body)
	}
	b.do(&nav, "goto", a.URL)
	b.do(&shown, "text", "#title", "Hello", "from", "a", "task")

	// The dev page, opened again, gets its HMR socket from dev, not live:
	// a dev edit reaches it while live stays as promoted.
	b.do(&nav, "goto", a.DevURL)
	b.do(&shown, "text", "#title", "Hello", "from", "a", "task")
	b.do(nil, "mark")
	runTask(t, s, a.ID, "sh", "-c", "sed -i 's/Hello from a task/Hello again/' src/App.jsx")
	b.do(&shown, "text", "#title", "Hello", "again")
	if !shown.Marked {
		t.Fatal("the dev page reloaded after the promotion: its HMR socket should have stayed on dev")
	}
	if _, body, _ := appGet(t, s, "shop", "/src/App.jsx", auth); !strings.Contains(body, "Hello from a task") {
		t.Fatalf("a dev edit reached live: %.200s", body)
	}

	// Rollback points live back at the preset's page.
	var back api.App
	mustCall(t, s, "POST", "/v1/apps/"+a.ID+"/rollback", struct{}{}, &back, http.StatusOK)
	if back.Live != a.Live {
		t.Fatalf("rollback: live %s, want %s", back.Live, a.Live)
	}
	if _, body, _ := appGet(t, s, "shop", "/src/App.jsx", auth); !strings.Contains(body, "Hello from hutch") {
		t.Fatalf("live after rollback: %.200s", body)
	}

	// The app's log tells the story.
	var evs api.EventList
	mustCall(t, s, "GET", "/v1/apps/"+a.ID+"/events?limit=1000", nil, &evs, http.StatusOK)
	var types []string
	for _, e := range evs.Events {
		types = append(types, e.Type)
	}
	for _, want := range []string{api.EventAppCreated, api.EventTaskStarted, api.EventTaskCompleted, api.EventAppUndone,
		api.EventSnapshotCreated, api.EventAppPromoted, api.EventAppRolledBack} {
		if !slices.Contains(types, want) {
			t.Errorf("app events %v lack %s", types, want)
		}
	}

	// Delete takes the sandboxes with it.
	mustCall(t, s, "DELETE", "/v1/apps/"+a.ID, nil, nil, http.StatusNoContent)
	for _, id := range []string{back.Live, back.Dev, back.PreviousLive} {
		var sb api.Sandbox
		mustCall(t, s, "GET", "/v1/sandboxes/"+id, nil, &sb, http.StatusOK)
		if sb.State != api.StateDestroyed {
			t.Errorf("sandbox %s of the deleted app is %s", id, sb.State)
		}
	}
}

// waitFor polls cond until it holds or patience runs out (a hang guard).
func waitFor(t *testing.T, what string, patience time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
