package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestIdlePreview: preview requests keep a sandbox from its idle action,
// even over the router's pooled tunnels (previewapp keeps connections
// alive, so most requests make no new call through the door); once they
// stop it is paused (the default on_idle) with its events, and the next
// preview request resumes it and is answered, not held on a pooled
// tunnel to a frozen program.
func TestIdlePreview(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace", "--sandbox-idle", "4s")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := newPreview(t, s)
	startApp(t, s, p, sb.ID)
	auth := map[string]string{"Authorization": "Bearer " + s.key}
	get := func(what string) {
		t.Helper()
		resp, body := p.get(p.base(sb.ID, appPort)+"/headers", auth)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %q", what, resp.StatusCode, body)
		}
	}
	// Busy for more than the window: requests every 300 ms.
	for end := time.Now().Add(7 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		get("preview while busy")
	}
	if got, err := c.GetSandbox(ctx, sb.ID); err != nil || got.State != api.StateRunning {
		t.Fatalf("a sandbox serving previews: %+v, %v; want running", got, err)
	}
	// The store says paused before the freeze; sandbox.paused comes once
	// it is done.
	var evs *api.EventList
	waitUntil(t, "the idle sandbox paused", func() bool {
		var err error
		evs, err = c.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventSandboxIdle, api.EventSandboxPaused}})
		return err == nil && len(evs.Events) >= 2
	})
	if got, err := c.GetSandbox(ctx, sb.ID); err != nil || got.State != api.StatePaused {
		t.Fatalf("after sandbox.paused: %+v, %v; want paused", got, err)
	}
	if len(evs.Events) != 2 || evs.Events[0].Data["action"] != "pause" || evs.Events[1].Data["reason"] != "idle" {
		t.Fatalf("idle events: %+v", evs)
	}
	get("first preview request to the paused sandbox")
	if got, err := c.GetSandbox(ctx, sb.ID); err != nil || got.State != api.StateRunning {
		t.Fatalf("after the preview request: %+v, %v; want running", got, err)
	}
}
