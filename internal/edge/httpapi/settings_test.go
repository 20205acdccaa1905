package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/control/settings"
	"github.com/hutchdev/hutch/internal/server/config"
)

// newSettingsFixture is newAPIFixture with the settings service wired as
// hutch serve wires it: over the sandbox service's settings, applying to
// it.
func newSettingsFixture(t *testing.T) *apiFixture {
	t.Helper()
	f := newAPIFixture(t)
	log := slog.New(slog.DiscardHandler)
	// Two of the server's read-only settings (internal/server builds
	// them all from its config).
	readOnly := []settings.Fixed{
		{Key: "listen", Flag: "--listen", Value: config.Default().Listen},
		{Key: "egress_allow_private", Flag: "--egress-allow-private", Value: []string{}},
	}
	set, err := settings.New(tenancy.System(f.ctx), settings.Config{Store: f.st, Events: f.events, Flags: f.svc.Settings(),
		ReadOnly: readOnly, Check: sandbox.CheckSettings, Apply: f.svc.ApplySettings, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(Config{Sandboxes: f.svc, Events: f.events, Auth: &auth.Authenticator{Store: f.st},
		Settings: set, Log: log, Version: "test", StoreName: "sqlite", MaxBodyBytes: 1 << 20, MaxTarBytes: 8 << 20}))
	t.Cleanup(srv.Close)
	f.srv = srv
	f.ca, f.cb = client.New(srv.URL, f.keyA), client.New(srv.URL, f.keyB)
	return f
}

// TestSettingsAPI: only admins read and change the settings; a PATCH
// refuses unknown keys (400 unknown_setting), read-only ones (403
// setting_protected) and bad values (400 invalid_setting); one that
// passes applies at once and is a settings.changed event in the admin's
// tenant only.
func TestSettingsAPI(t *testing.T) {
	f := newSettingsFixture(t)
	_, admin := f.adminKey(t, "admin")
	_, reader := f.keyOf(t, f.keyA, "reader", api.RoleReader)
	for _, key := range []string{f.keyA, reader} {
		for _, method := range []string{"GET", "PATCH"} {
			if status, code := f.rawAs(t, key, method, "/v1/settings", `{"max_timeout_s":60}`, nil); status != http.StatusForbidden || code != "admin_required" {
				t.Errorf("%s /v1/settings with a non-admin key: %d %s, want 403 admin_required", method, status, code)
			}
		}
	}

	var view api.SettingsView
	if status, code := f.rawAs(t, admin, "GET", "/v1/settings", "", &view); status != http.StatusOK {
		t.Fatalf("GET /v1/settings: %d %s", status, code)
	}
	if view.Settings != f.svc.Settings() || view.ReadOnly["listen"] != config.Default().Listen {
		t.Errorf("GET /v1/settings = %+v, want the service's settings and the read-only listen", view)
	}

	for _, tc := range []struct {
		body   string
		status int
		code   string
		says   string
	}{
		{`{"bogus":1}`, http.StatusBadRequest, "unknown_setting", "bogus"},
		{`{"listen":"0.0.0.0:80"}`, http.StatusForbidden, "setting_protected", "--listen"},
		{`{"egress_allow_private":[]}`, http.StatusForbidden, "setting_protected", "--egress-allow-private"},
		{`{"max_timeout_s":"60"}`, http.StatusBadRequest, "invalid_setting", "max_timeout_s"},
		{`{"max_timeout_s":0}`, http.StatusBadRequest, "invalid_setting", "max_timeout_s"},
		{`{"on_expiry":"explode"}`, http.StatusBadRequest, "invalid_setting", "on_expiry"},
		{`{"max_timeout_s":60`, http.StatusBadRequest, "invalid_json", ""},
		{``, http.StatusBadRequest, "invalid_json", ""},
		{`[]`, http.StatusBadRequest, "invalid_json", ""},
	} {
		var e api.Error
		status, _ := f.send(t, admin, "PATCH", "/v1/settings", tc.body, &e, nil)
		if status != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.says) {
			t.Errorf("PATCH %s: %d %s %q, want %d %s saying %q", tc.body, status, e.Error.Code, e.Error.Message, tc.status, tc.code, tc.says)
		}
	}
	if f.svc.Settings() != view.Settings {
		t.Fatalf("refused PATCHes changed the settings: %+v", f.svc.Settings())
	}

	ca := client.New(f.srv.URL, admin)
	got, err := ca.PatchSettings(f.ctx, map[string]any{"max_timeout_s": 600, "default_timeout_s": 60})
	if err != nil {
		t.Fatal(err)
	}
	if got.Settings.MaxTimeoutS != 600 || f.svc.Settings().MaxTimeoutS != 600 {
		t.Errorf("after PATCH: answer %+v, in force %+v; want max_timeout_s 600", got.Settings, f.svc.Settings())
	}
	if again, err := ca.Settings(f.ctx); err != nil || again.Settings != got.Settings {
		t.Errorf("Settings after PATCH = %+v, %v; want %+v", again, err, got.Settings)
	}
	if status, _, e := f.raw(t, "POST", "/v1/sandboxes", `{"timeout_s":601}`); status != http.StatusBadRequest || e.Code != "invalid_timeout" {
		t.Errorf("create over the new maximum: %d %s, want 400 invalid_timeout", status, e.Code)
	}

	evs, err := ca.Events(f.ctx, client.EventQuery{Types: []string{api.EventSettingsChanged}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Events) != 1 || evs.Events[0].SandboxID != "" {
		t.Fatalf("admin's settings.changed events = %+v, want one, of no sandbox", evs.Events)
	}
	want := map[string]any{"old": float64(3600), "new": float64(600)}
	if d, _ := evs.Events[0].Data["max_timeout_s"].(map[string]any); d == nil || d["old"] != want["old"] || d["new"] != want["new"] {
		t.Errorf("event data %v, want max_timeout_s %v", evs.Events[0].Data, want)
	}
	if other, err := f.cb.Events(f.ctx, client.EventQuery{Types: []string{api.EventSettingsChanged}}); err != nil || len(other.Events) != 0 {
		t.Errorf("tenant b sees %+v, %v; want no settings.changed", other, err)
	}
}

// TestSettingsUnavailable: a server built without the settings service
// says so.
func TestSettingsUnavailable(t *testing.T) {
	f := newAPIFixture(t)
	_, admin := f.adminKey(t, "admin")
	if status, code := f.rawAs(t, admin, "GET", "/v1/settings", "", nil); status != http.StatusServiceUnavailable || code != "settings_unavailable" {
		t.Errorf("GET /v1/settings without the service: %d %s, want 503 settings_unavailable", status, code)
	}
}
