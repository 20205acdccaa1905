package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
)

// TestAppRouting walks a table of paths on an app's host and checks who
// answered: the live sandbox, the dev sandbox (its prefix stripped), or
// the control plane, whose paths never reach a sandbox. Then privacy: a
// browser goes to /login, an API client gets 401, another tenant's key
// finds nothing, and a public app lets everyone in.
func TestAppRouting(t *testing.T) {
	s := startServer(t, "")
	a := createApp(t, s, api.CreateAppRequest{Name: "site", Preset: "static"}, 2*time.Minute)
	c := s.client()
	ctx := t.Context()
	// Mark each sandbox, so its answers say which one answered.
	for id, who := range map[string]string{a.Live: "live", a.Dev: "dev"} {
		if _, err := c.WriteFile(ctx, id, "/workspace/public/who.txt", 0o644, strings.NewReader(who)); err != nil {
			t.Fatal(err)
		}
	}
	key := map[string]string{"Authorization": "Bearer " + s.key}
	for _, tc := range []struct {
		path   string
		status int
		has    string // what the body holds
	}{
		{"/who.txt", 200, "live"},
		{"/dev/who.txt", 200, "dev"},
		{"/dev/who.txt?x=1", 200, "dev"},      // queries pass
		{"/who.txt?dev=1", 200, "live"},       // a query is not a role
		{"/dev", 200, "/dev/__reload"},        // the prefix alone is the dev root
		{"/dev/", 200, "/dev/__reload"},       // the dev server knows its base
		{"/index.html", 200, "/__reload"},     // live's pages carry live's reloader
		{"/nothing-here.txt", 404, ""},        // the live app's own 404
		{"/devices.txt", 404, ""},             // not /dev: live's
		{"/DEV/who.txt", 404, ""},             // paths are case-sensitive: live's
		{"/loginx", 404, ""},                  // not /login: live's
		{"/dev/dev/who.txt", 404, ""},         // only one prefix is stripped: dev's
		{"/dev/%2e%2e/sandbox.yaml", 404, ""}, // no way out of public/
		{"/v1/info", 200, `"drivers"`},        // the API itself
		{"/v1/apps/" + a.ID, 200, `"name":"site"`},
		{"/v1/apps/" + a.ID + "/events", 200, "app.created"},
		{"/v1/nothing", 404, "unknown_route"}, // the API's 404, not the app's
		{"/v1", 404, "unknown_route"},
		{"/auth/x", 404, "unknown_route"},
		{"/admin", 404, "unknown_route"},
		{"/provider", 404, "unknown_route"},
		{"/login", 200, "Sign in to site"}, // the control plane's sign-in
		{"/dev/v1/info", 404, "reserved_path"},
		{"/dev/login", 404, "reserved_path"},
		{"/dev/admin", 404, "reserved_path"},
		{"/dev/provider/v1/x", 404, "reserved_path"},
	} {
		st, body, _ := appGet(t, s, "site", tc.path, key)
		if st != tc.status || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s: %d %.120q, want %d with %q", tc.path, st, body, tc.status, tc.has)
		}
		if sandboxed := body == "live" || body == "dev"; sandboxed && (strings.HasPrefix(tc.path, "/v1") || tc.status == 404) {
			t.Errorf("GET %s reached a sandbox", tc.path)
		}
		if tc.path == "/index.html" && strings.Contains(body, "/dev/__reload") {
			t.Errorf("live's page carries dev's reloader")
		}
	}

	// Private: a browser is sent to /login, an API client gets 401.
	st, _, loc := appGet(t, s, "site", "/who.txt", map[string]string{"Accept": "text/html"})
	if st != http.StatusSeeOther || loc != "/login?next=%2Fwho.txt" {
		t.Errorf("browser without a session: %d to %q, want 303 to /login", st, loc)
	}
	st, body, _ := appGet(t, s, "site", "/dev/who.txt", nil)
	if st != http.StatusUnauthorized || !strings.Contains(body, "app_private") {
		t.Errorf("API client without a key: %d %.120s, want 401 app_private", st, body)
	}
	// Another tenant's key finds no app.
	var ten api.Tenant
	mustCall(t, s, "POST", "/v1/tenants", api.CreateTenantRequest{Name: "other"}, &ten, http.StatusCreated)
	st, _, _ = appGet(t, s, "site", "/who.txt", map[string]string{"Authorization": "Bearer " + ten.Key.Secret})
	if st != http.StatusNotFound {
		t.Errorf("another tenant's key: %d, want 404", st)
	}
	// Nor does it reach the app through the API.
	if st, code := call(t, s.url, ten.Key.Secret, "GET", "/v1/apps/"+a.ID, nil, nil); st != 404 || code != "app_not_found" {
		t.Errorf("another tenant's GET of the app: %d %s", st, code)
	}
	// An unknown app is 404 with a key, 401 without (an anonymous caller
	// cannot tell).
	if st, _, _ := appGet(t, s, "nosuch", "/", key); st != http.StatusNotFound {
		t.Errorf("unknown app with a key: %d", st)
	}
	// Public: everyone is let in.
	mustCall(t, s, "PATCH", "/v1/apps/"+a.ID, api.PatchAppRequest{Public: ptr(true)}, nil, http.StatusOK)
	if st, body, _ := appGet(t, s, "site", "/dev/who.txt", nil); st != 200 || body != "dev" {
		t.Errorf("public app without a key: %d %q", st, body)
	}
	// Names are host labels, unique on the server.
	if st, code := call(t, s.url, s.key, "POST", "/v1/apps", api.CreateAppRequest{Name: "site", Preset: "static"}, nil); st != 409 || code != "app_exists" {
		t.Errorf("a second app named site: %d %s", st, code)
	}
	for _, bad := range []api.CreateAppRequest{{Name: "1abc", Preset: "static"}, {Name: "Site", Preset: "static"}, {Name: "a-", Preset: "static"},
		{Name: "8080-" + a.Live, Preset: "static"}} {
		if st, code := call(t, s.url, s.key, "POST", "/v1/apps", bad, nil); st != 400 || code != "invalid_app_name" {
			t.Errorf("name %q: %d %s, want 400 invalid_app_name", bad.Name, st, code)
		}
	}
	if st, code := call(t, s.url, s.key, "POST", "/v1/apps", api.CreateAppRequest{Name: "x", Preset: "cobol"}, nil); st != 400 || code != "unknown_preset" {
		t.Errorf("unknown preset: %d %s", st, code)
	}
}

func ptr[T any](v T) *T { return &v }
