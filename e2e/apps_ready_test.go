package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestAppReadyServes: an app is ready only once both roles' web processes
// serve. Its template's sandbox.yaml starts the static preset's server
// three seconds late, longer than making live takes, so the first
// requests after ready find both serving only if the create waited for
// them. A web process that never serves fails the create with the reason
// and its log, and leaves no sandbox.
func TestAppReadyServes(t *testing.T) {
	s := startServer(t, "")
	c := s.client()
	ctx := t.Context()
	// template makes a template of the default root with only a
	// sandbox.yaml in the app directory: the preset adds its other files.
	template := func(name, manifest string) {
		t.Helper()
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WriteFile(ctx, sb.ID, "/workspace/sandbox.yaml", 0o644, strings.NewReader(manifest)); err != nil {
			t.Fatal(err)
		}
		snap, err := c.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		mustCall(t, s, "POST", "/v1/templates", map[string]string{"name": name, "snapshot": snap.ID}, nil, http.StatusCreated)
		mustCall(t, s, "DELETE", "/v1/sandboxes/"+sb.ID, nil, nil, http.StatusNoContent)
	}
	template("slow-web", "version: 1\nweb:\n  command: sleep 3 && exec node dev-server.mjs\n  port: 8080\n")
	template("dead-web", "version: 1\nweb:\n  command: echo no server here >&2; exit 3\n  port: 8080\n")

	createApp(t, s, api.CreateAppRequest{Name: "slow", Preset: "static", Template: "slow-web"}, 2*time.Minute)
	auth := map[string]string{"Authorization": "Bearer " + s.key}
	for _, path := range []string{"/", "/dev/"} {
		if st, body, _ := appGet(t, s, "slow", path, auth); st != http.StatusOK || !strings.Contains(body, "Hello from hutch") {
			t.Errorf("GET %s of a ready app: %d %.200q", path, st, body)
		}
	}

	a, err := c.CreateApp(ctx, api.CreateAppRequest{Name: "dead", Preset: "static", Template: "dead-web"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if a, err = c.WaitApp(wctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if a.State != api.AppFailed || !strings.Contains(a.Error, "web process") || !strings.Contains(a.Error, "crashed") ||
		!strings.Contains(a.Error, "no server here") || a.Live != "" || a.Dev != "" {
		t.Errorf("an app whose web process never serves: %s %q, live %q, dev %q; want failed, saying it crashed, with its log, and no sandbox",
			a.State, a.Error, a.Live, a.Dev)
	}
}
