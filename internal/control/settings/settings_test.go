package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// flags are the settings hutch serve's defaults give.
var flags = config.Default().Settings()

// readOnly are three of the server's other settings, at its defaults,
// one set by no flag (the server builds the whole list: internal/server's
// TestReadOnly).
var readOnly = []Fixed{
	{Key: "listen", Flag: "--listen", Value: config.Default().Listen},
	{Key: "max_file_bytes", Flag: "--max-file-bytes", Value: config.Default().MaxFileBytes},
	{Key: "max_limits", Value: config.Default().MaxLimits},
}

// fixture is a real SQLite store with one tenant, its admin's and a
// member's contexts, and what the service applied.
type fixture struct {
	st            store.Store
	tenant        string
	admin, member context.Context
	log           bytes.Buffer

	mu      sync.Mutex
	applied []api.Settings
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, tenant: ids.New()}
	if err := st.CreateTenant(system(), store.Tenant{ID: f.tenant, Name: "ops"}); err != nil {
		t.Fatal(err)
	}
	f.admin = tenancy.With(context.Background(), tenancy.Principal{TenantID: f.tenant, KeyID: "k-admin", Role: api.RoleAdmin})
	f.member = tenancy.With(context.Background(), tenancy.Principal{TenantID: f.tenant, KeyID: "k-member", Role: api.RoleMember})
	return f
}

func system() context.Context { return tenancy.System(context.Background()) }

// open builds the service as hutch serve does, over cfg's read-only
// settings.
func (f *fixture) open(t *testing.T) (*Service, error) {
	t.Helper()
	return New(system(), Config{
		Store:    f.st,
		Events:   events.New(f.st, events.Config{}),
		Flags:    flags,
		ReadOnly: readOnly,
		Check:    sandbox.CheckSettings,
		Apply: func(v api.Settings) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.applied = append(f.applied, v)
			return nil
		},
		Log: slog.New(slog.NewJSONHandler(&f.log, nil)),
	})
}

func (f *fixture) service(t *testing.T) *Service {
	t.Helper()
	s, err := f.open(t)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lastApplied is what the service last put in force.
func (f *fixture) lastApplied() api.Settings {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied[len(f.applied)-1]
}

// stored is what the store keeps, each value as a string.
func (f *fixture) stored(t *testing.T) map[string]string {
	t.Helper()
	m, err := f.st.Settings(system())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// events returns the tenant's settings.changed events.
func (f *fixture) events(t *testing.T) []store.Event {
	t.Helper()
	evs, _, err := f.st.ListEvents(f.admin, store.EventQuery{Types: []string{api.EventSettingsChanged}})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestPatch: a PATCH changes only the keys it names, and what changed is
// stored, applied and recorded once with its old and new values; one
// that changes nothing writes and records nothing.
func TestPatch(t *testing.T) {
	f := newFixture(t)
	s := f.service(t)
	if got := f.lastApplied(); got != flags {
		t.Fatalf("applied at start %+v, want the flags' %+v", got, flags)
	}
	view, err := s.Patch(f.admin, json.RawMessage(`{"max_timeout_s": 600, "default_timeout_s": 60, "on_idle": "stop", "expiry_warning_s": 300}`))
	if err != nil {
		t.Fatal(err)
	}
	want := flags
	want.MaxTimeoutS, want.DefaultTimeoutS, want.OnIdle = 600, 60, api.OnExpiryStop
	if diff := cmp.Diff(want, view.Settings); diff != "" {
		t.Errorf("settings after PATCH (-want +got):\n%s", diff)
	}
	if got := f.lastApplied(); got != want {
		t.Errorf("applied %+v, want %+v", got, want)
	}
	if got := s.Get().Settings; got != want {
		t.Errorf("Get = %+v, want %+v", got, want)
	}
	if view.ReadOnly["listen"] != config.Default().Listen || view.ReadOnly["max_file_bytes"] != config.Default().MaxFileBytes {
		t.Errorf("read_only = %v, want the flags' listen and max_file_bytes", view.ReadOnly)
	}
	// expiry_warning_s was named at its flag's value: not a change.
	wantStored := map[string]string{"max_timeout_s": "600", "default_timeout_s": "60", "on_idle": `"stop"`}
	if diff := cmp.Diff(wantStored, f.stored(t)); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	evs := f.events(t)
	if len(evs) != 1 {
		t.Fatalf("%d settings.changed events, want 1: %+v", len(evs), evs)
	}
	wantData := map[string]any{
		"max_timeout_s":     map[string]any{"old": float64(flags.MaxTimeoutS), "new": float64(600)},
		"default_timeout_s": map[string]any{"old": float64(flags.DefaultTimeoutS), "new": float64(60)},
		"on_idle":           map[string]any{"old": flags.OnIdle, "new": "stop"},
	}
	if diff := cmp.Diff(wantData, evs[0].Data); diff != "" || evs[0].TenantID != f.tenant || evs[0].SandboxID != "" {
		t.Errorf("event %+v (-want +got data):\n%s", evs[0], diff)
	}
	if !strings.Contains(evs[0].Message, "max_timeout_s 86400 → 600") {
		t.Errorf("event message %q does not say what changed", evs[0].Message)
	}

	n := len(f.applied)
	for _, body := range []string{`{}`, `{"max_timeout_s": 600, "on_idle": "stop"}`} {
		if _, err := s.Patch(f.admin, json.RawMessage(body)); err != nil {
			t.Fatalf("PATCH %s: %v", body, err)
		}
	}
	if len(f.events(t)) != 1 || len(f.applied) != n {
		t.Errorf("PATCHes that change nothing: %d events, %d applies; want none more", len(f.events(t))-1, len(f.applied)-n)
	}
}

// TestPatchRefused: an unknown key, a read-only one, a value of the wrong
// type or out of range, and a body that is no object are refused with
// their codes and change nothing.
func TestPatchRefused(t *testing.T) {
	f := newFixture(t)
	s := f.service(t)
	for _, tc := range []struct {
		body  string
		class error
		code  string
		says  []string
	}{
		{`{"max_timeout_s": 60, "default_timeout_s": 30, "bogus": 1}`, errdefs.ErrInvalid, "unknown_setting", []string{`"bogus"`, "max_timeout_s"}},
		{`{"MAX_TIMEOUT_S": 60}`, errdefs.ErrInvalid, "unknown_setting", []string{"MAX_TIMEOUT_S"}},
		{`{"listen": "0.0.0.0:1"}`, errdefs.ErrForbidden, "setting_protected", []string{"listen", "--listen"}},
		{`{"max_file_bytes": 1, "max_timeout_s": 60}`, errdefs.ErrForbidden, "setting_protected", []string{"--max-file-bytes"}},
		{`{"max_limits": {}}`, errdefs.ErrForbidden, "setting_protected", []string{"max_limits"}},
		{`{"max_timeout_s": "60"}`, errdefs.ErrInvalid, "invalid_setting", []string{"max_timeout_s", "a whole number, not a string"}},
		{`{"max_timeout_s": 1.5}`, errdefs.ErrInvalid, "invalid_setting", []string{"max_timeout_s", "1.5"}},
		{`{"max_timeout_s": 1e30}`, errdefs.ErrInvalid, "invalid_setting", []string{"max_timeout_s"}},
		{`{"on_idle": null}`, errdefs.ErrInvalid, "invalid_setting", []string{"on_idle", "a string, not null"}},
		{`{"on_idle": 1}`, errdefs.ErrInvalid, "invalid_setting", []string{"on_idle"}},
		{`{"on_idle": "sleep"}`, errdefs.ErrInvalid, "invalid_setting", []string{"on_idle"}},
		{`{"max_timeout_s": 0}`, errdefs.ErrInvalid, "invalid_setting", []string{"max_timeout_s"}},
		{`{"max_timeout_s": 60}`, errdefs.ErrInvalid, "invalid_setting", []string{"default_timeout_s"}},
		{`{"memory_critical_pct": 50}`, errdefs.ErrInvalid, "invalid_setting", []string{"memory_critical_pct"}},
		{`[1]`, errdefs.ErrInvalid, "invalid_json", nil},
		{`null`, errdefs.ErrInvalid, "invalid_json", nil},
	} {
		_, err := s.Patch(f.admin, json.RawMessage(tc.body))
		_, code, msg := errdefs.Classify(err)
		if !errors.Is(err, tc.class) || code != tc.code {
			t.Errorf("PATCH %s: %v (code %q), want %v %s", tc.body, err, code, tc.class, tc.code)
			continue
		}
		for _, w := range tc.says {
			if !strings.Contains(msg, w) {
				t.Errorf("PATCH %s: message %q does not say %q", tc.body, msg, w)
			}
		}
	}
	// The store refuses a member, whatever the route said.
	_, err := s.Patch(f.member, json.RawMessage(`{"max_timeout_s": 7200}`))
	if _, code, _ := errdefs.Classify(err); !errors.Is(err, errdefs.ErrForbidden) || code != "admin_required" {
		t.Errorf("member's PATCH: %v, want 403 admin_required", err)
	}
	if got := s.Get().Settings; got != flags || len(f.stored(t)) != 0 || len(f.events(t)) != 0 || len(f.applied) != 1 {
		t.Errorf("after refused PATCHes: settings %+v, stored %v, %d events, %d applies; want nothing changed", got, f.stored(t), len(f.events(t)), len(f.applied))
	}
}

// TestStoredOverridesFlags: at start the values kept in the store win
// over the flags, each logged; a key this hutch does not know is logged
// and ignored; stored values that no longer fit the flags fail the start.
func TestStoredOverridesFlags(t *testing.T) {
	f := newFixture(t)
	if _, err := f.service(t).Patch(f.admin, json.RawMessage(`{"expiry_warning_s": 30, "on_expiry": "stop"}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.st.PutSettings(system(), map[string]json.RawMessage{"from_the_future": json.RawMessage(`true`)}); err != nil {
		t.Fatal(err)
	}
	f.log.Reset()
	s := f.service(t)
	want := flags
	want.ExpiryWarningS, want.OnExpiry = 30, api.OnExpiryStop
	if got := s.Get().Settings; got != want {
		t.Errorf("settings after a restart %+v, want %+v", got, want)
	}
	if got := f.lastApplied(); got != want {
		t.Errorf("applied after a restart %+v, want %+v", got, want)
	}
	logged := f.log.String()
	for _, w := range []string{
		`"msg":"a setting kept in the store overrides the flag","setting":"expiry_warning_s","value":"30","flag":"300"`,
		`"msg":"a setting kept in the store overrides the flag","setting":"on_expiry","value":"\"stop\"","flag":"\"destroy\""`,
		`"msg":"a setting kept in the store is unknown to this hutch: ignored","setting":"from_the_future"`,
	} {
		if !strings.Contains(logged, w) {
			t.Errorf("log lacks %s:\n%s", w, logged)
		}
	}

	// A maximum kept below the flag's default timeout: the start says so.
	if err := f.st.PutSettings(system(), map[string]json.RawMessage{"max_timeout_s": json.RawMessage(`60`)}); err != nil {
		t.Fatal(err)
	}
	_, err := f.open(t)
	if err == nil || !strings.Contains(err.Error(), "max_timeout_s") || !strings.Contains(err.Error(), "default_timeout_s") {
		t.Errorf("start with a stored maximum under the flag's default: %v, want an error naming both", err)
	}
}

// TestPatchConcurrent: PATCHes of different keys at once all land, none
// lost to another's read of what was in force; each is one event.
func TestPatchConcurrent(t *testing.T) {
	f := newFixture(t)
	s := f.service(t)
	keys := []string{"expiry_warning_s", "idle_timeout_s", "paused_stop_after_s", "min_idle_s"}
	var wg sync.WaitGroup
	for i, k := range keys {
		for round := range 5 {
			wg.Go(func() {
				body := fmt.Sprintf(`{%q: %d}`, k, 100*(i+1)+round)
				if _, err := s.Patch(f.admin, json.RawMessage(body)); err != nil {
					t.Errorf("PATCH %s: %v", body, err)
				}
			})
		}
	}
	wg.Wait()
	got := encode(s.Get().Settings)
	stored := f.stored(t)
	for i, k := range keys {
		var n int
		if err := json.Unmarshal(got[k], &n); err != nil || n < 100*(i+1) || n >= 100*(i+2) {
			t.Errorf("%s = %s after concurrent PATCHes, want one of them", k, got[k])
		}
		if stored[k] != string(got[k]) {
			t.Errorf("%s stored %s, in force %s", k, stored[k], got[k])
		}
	}
	if a := f.lastApplied(); a != s.Get().Settings {
		t.Errorf("last applied %+v, in force %+v", a, s.Get().Settings)
	}
	if n := len(f.events(t)); n != len(keys)*5 {
		t.Errorf("%d events, want %d", n, len(keys)*5)
	}
}

// TestReadOnlyIsNoSetting: New refuses a read-only key that shadows a
// setting (internal/server's TestReadOnly builds the server's list
// through it).
func TestReadOnlyIsNoSetting(t *testing.T) {
	f := newFixture(t)
	_, err := New(system(), Config{Store: f.st, Events: events.New(f.st, events.Config{}), Flags: flags, Check: sandbox.CheckSettings,
		Apply: func(api.Settings) error { return nil }, ReadOnly: []Fixed{{Key: "max_timeout_s", Flag: "--max-timeout"}}})
	if err == nil {
		t.Error("New took a read-only key that is a setting")
	}
}
