package apps

import (
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// TestDelivered: each access policy reaches exactly the places it names.
func TestDelivered(t *testing.T) {
	for _, tc := range []struct {
		access         string
		runtime, agent bool
	}{
		{api.AccessControlPlane, false, false},
		{api.AccessRuntime, true, false},
		{api.AccessAgent, false, true},
		{api.AccessBoth, true, true},
	} {
		if got := delivered(tc.access, api.AccessRuntime); got != tc.runtime {
			t.Errorf("%s to the runtime: %v", tc.access, got)
		}
		if got := delivered(tc.access, api.AccessAgent); got != tc.agent {
			t.Errorf("%s to the agent: %v", tc.access, got)
		}
	}
	if a, err := checkAccess(""); err != nil || a != api.AccessControlPlane {
		t.Errorf(`checkAccess("") = %q, %v`, a, err)
	}
	if _, err := checkAccess("everywhere"); !errdefs.HasCode(err, "invalid_access") {
		t.Errorf("checkAccess(everywhere): %v", err)
	}
	// A config value's sealing name cannot be a secret's (':' is never in
	// one), nor another app's.
	if sealName("a1", "K") == sealName("a1", "K2") || !strings.Contains(sealName("a1", "K"), ":") {
		t.Error("seal names collide")
	}
}

// TestProcessesRunning: what a promotion's process check says.
func TestProcessesRunning(t *testing.T) {
	m := &sandbox.AppManifest{Web: &sandbox.AppWeb{Port: 1, HealthPath: "/"}}
	ok := sandbox.AppStatus{Manifest: m, Processes: []api.AppProcess{{Name: "web", State: api.AppProcessRunning}}}
	if err := processesRunning(ok); err != nil {
		t.Errorf("running: %v", err)
	}
	crashed := sandbox.AppStatus{Manifest: m, Processes: []api.AppProcess{
		{Name: "web", State: api.AppProcessRunning}, {Name: "queue", State: api.AppProcessCrashed, Message: "exited 5 times"}}}
	if err := processesRunning(crashed); err == nil || !strings.Contains(err.Error(), "queue is crashed (exited 5 times)") {
		t.Errorf("crashed: %v", err)
	}
	// The last good manifest runs on while the file is invalid: that is
	// not a failed check; no manifest at all is.
	invalid := ok
	invalid.ManifestError = &sandbox.ManifestError{Code: "manifest_invalid", Message: "sandbox.yaml:2: bad"}
	if err := processesRunning(invalid); err != nil {
		t.Errorf("invalid file, good manifest running: %v", err)
	}
	invalid.Manifest = nil
	if err := processesRunning(invalid); err == nil {
		t.Error("no manifest at all passed")
	}
	if !transient(sandbox.AppStatus{Processes: []api.AppProcess{{State: api.AppProcessStarting}}}) || transient(ok) {
		t.Error("transient")
	}
}

// TestCheckFailed: the promotion's error names every failed check and
// none that passed.
func TestCheckFailed(t *testing.T) {
	err := checkFailed("dev", []api.Check{{Name: "processes", OK: true}, {Name: "http", Message: "GET / answered 500"},
		{Name: "websocket", Message: "timeout"}})
	if !errdefs.HasCode(err, "promotion_check_failed") || !strings.Contains(err.Error(), "http: GET / answered 500; websocket: timeout") ||
		strings.Contains(err.Error(), "processes") {
		t.Errorf("checkFailed: %v", err)
	}
	if got := prefixed("live.", []api.Check{{Name: "http"}}); got[0].Name != "live.http" {
		t.Errorf("prefixed: %+v", got)
	}
	if base(api.RoleDev) != "/dev/" || base(api.RoleLive) != "/" {
		t.Error("base paths")
	}
	if tail("abcdef", 3) != "…def" || tail(" ab ", 10) != "ab" {
		t.Error("tail")
	}
}

// TestRoutesCache: a read that missed only fills a gap (a write that came
// meanwhile wins), and a deleted app does not come back from a read that
// raced its delete.
func TestRoutesCache(t *testing.T) {
	var r routes
	older := &store.App{ID: "a1", Name: "shop", Live: "l1", Public: true}
	newer := &store.App{ID: "a1", Name: "shop", Live: "l2", Public: false}
	r.put(newer)
	r.putIfAbsent(older)
	if got := r.app("shop"); got.Live != "l2" || got.Public {
		t.Errorf("a stale read replaced a write: %+v", got)
	}
	r.drop(newer)
	r.putIfAbsent(older)
	r.put(older)
	if got := r.app("shop"); got != nil {
		t.Errorf("a deleted app came back: %+v", got)
	}
	again := &store.App{ID: "a2", Name: "shop", Live: "l3"}
	r.putIfAbsent(again)
	if got := r.app("shop"); got == nil || got.ID != "a2" {
		t.Errorf("a new app of the name: %+v", got)
	}
}
