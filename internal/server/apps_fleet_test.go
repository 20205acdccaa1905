package server

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/runtime/driver/namespace"
	"github.com/hutchdev/hutch/internal/server/config"
)

// TestAppPlaced: an app's create is placed as a sandbox's is: through a
// node that is draining (which makes no sandbox), the app and its
// sandboxes are made on the other node.
func TestAppPlaced(t *testing.T) {
	f := startFleet(t, func(_ string, cfg *config.Config) { cfg.Driver = namespace.Name })
	ctx := context.Background()
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)
	// The drain reaches b at once (it came through b).
	if _, err := viaB.DrainNode(ctx, "b", 0); err != nil {
		t.Fatal(err)
	}
	app, err := viaB.CreateApp(ctx, api.CreateAppRequest{Name: "placed", Preset: "static"})
	if err != nil {
		t.Fatalf("app created through draining b: %v", err)
	}
	t.Cleanup(func() { viaB.DeleteApp(ctx, app.ID) })
	// Its sandboxes are made after the create answers.
	for end := time.Now().Add(30 * time.Second); app.Dev == "" && app.Error == "" && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if app, err = viaB.App(ctx, app.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{app.Dev, app.Live} {
		if id == "" {
			continue
		}
		sb, err := viaB.GetSandbox(ctx, id)
		if err != nil || sb.Node != "a" {
			t.Fatalf("app's sandbox %s: %+v, %v; want it on a", id, sb, err)
		}
	}
	if app.Dev == "" && app.Live == "" {
		t.Fatalf("app made with no sandbox: %+v", app)
	}
}
