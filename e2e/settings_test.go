package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestSettingsApplyLive: settings changes apply to running sandboxes
// without a restart. A lower max_timeout_s refuses a create and a new
// timeout of a running sandbox asking more; an expiry_warning_s set after
// a sandbox started gives it its sandbox.expiring. The change is one
// settings.changed event with old and new values, and a restart on the
// same data directory keeps it over the flags, saying so in its log.
func TestSettingsApplyLive(t *testing.T) {
	dataDir := testutil.DataDir(t)
	s := startServer(t, dataDir, "--expiry-warning", "0")
	c := s.client()
	ctx := context.Background()

	// Started before the PATCH: one to warn (its expiry 20 s away), one
	// to extend.
	warned, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: 20})
	if err != nil {
		t.Fatal(err)
	}
	running, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: 3600})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // two reaper ticks: no warning with --expiry-warning 0
	if evs := expiring(t, c, warned.ID); len(evs) != 0 {
		t.Fatalf("sandbox.expiring before the PATCH, with --expiry-warning 0: %+v", evs)
	}

	before, err := c.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.Settings.ExpiryWarningS != 0 || before.ReadOnly["data"] != dataDir {
		t.Errorf("GET /v1/settings = %+v, want expiry_warning_s 0 and the data directory", before)
	}
	changes := map[string]any{"max_timeout_s": 600, "default_timeout_s": 60, "expiry_warning_s": 60}
	after, err := c.PatchSettings(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	if a := after.Settings; a.MaxTimeoutS != 600 || a.DefaultTimeoutS != 60 || a.ExpiryWarningS != 60 {
		t.Fatalf("PATCH answered %+v", a)
	}

	// The new maximum, at once: creates and running sandboxes alike.
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: 601}); client.Code(err) != "invalid_timeout" {
		t.Errorf("create asking 601 s over the new maximum of 600: %v, want 400 invalid_timeout", err)
	}
	if _, err := c.SetTimeout(ctx, running.ID, 601); client.Code(err) != "invalid_timeout" {
		t.Errorf("timeout of 601 s for a running sandbox over the new maximum: %v, want 400 invalid_timeout", err)
	}
	if sb, err := c.SetTimeout(ctx, running.ID, 600); err != nil || sb.TimeoutS != 600 {
		t.Errorf("timeout of 600 s for a running sandbox = %+v, %v", sb, err)
	}
	if sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil || sb.TimeoutS != 60 {
		t.Errorf("create naming no timeout = %+v, %v; want the new default of 60 s", sb, err)
	}
	if info, err := c.Info(ctx); err != nil || info.Limits.MaxTimeoutS != 600 {
		t.Errorf("GET /v1/info limits = %+v, %v; want max_timeout_s 600", info, err)
	}

	// The warning, for a sandbox that started before it was set.
	deadline := time.Now().Add(10 * time.Second)
	for len(expiring(t, c, warned.ID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no sandbox.expiring within 10 s of expiry_warning_s 60, for a sandbox expiring in under 20 s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	evs, err := c.Events(ctx, client.EventQuery{Types: []string{api.EventSettingsChanged}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Events) != 1 {
		t.Fatalf("settings.changed events = %+v, want one", evs.Events)
	}
	for k, old := range map[string]float64{"max_timeout_s": 86400, "default_timeout_s": 3600, "expiry_warning_s": 0} {
		d, _ := evs.Events[0].Data[k].(map[string]any)
		if d == nil || d["old"] != old || d["new"] != float64(changes[k].(int)) {
			t.Errorf("settings.changed data[%s] = %v, want old %v new %v", k, evs.Events[0].Data[k], old, changes[k])
		}
	}

	// Kept: a restart with the same flags has the PATCHed values, and its
	// log says each wins over its flag.
	s.stop(true)
	s2, full := launch(t, nil, dataDir, nil, "--expiry-warning", "0")
	got, err := s2.client().Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Settings != after.Settings {
		t.Errorf("settings after a restart %+v, want the PATCHed %+v", got.Settings, after.Settings)
	}
	if _, err := s2.client().CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: 601}); client.Code(err) != "invalid_timeout" {
		t.Errorf("create asking 601 s after a restart: %v, want 400 invalid_timeout", err)
	}
	overrides := map[string]string{}
	for line := range strings.Lines(full.String()) {
		var rec struct{ Msg, Setting, Value, Flag string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "a setting kept in the store overrides the flag" {
			overrides[rec.Setting] = rec.Value + " over " + rec.Flag
		}
	}
	want := map[string]string{"max_timeout_s": "600 over 86400", "default_timeout_s": "60 over 3600", "expiry_warning_s": "60 over 0"}
	for k, w := range want {
		if overrides[k] != w {
			t.Errorf("start log for %s: %q, want %q (all: %v)", k, overrides[k], w, overrides)
		}
	}
}

// expiring returns the sandbox.expiring events of sandbox id.
func expiring(t *testing.T, c *client.Client, id string) []api.Event {
	t.Helper()
	evs, err := c.SandboxEvents(context.Background(), id, client.EventQuery{Types: []string{api.EventSandboxExpiring}})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Events
}
