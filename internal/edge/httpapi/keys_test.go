package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
)

// adminKey stores an admin key in tenant a, as the system would, and
// returns its id and secret.
func (f *apiFixture) adminKey(t *testing.T, name string) (string, string) {
	t.Helper()
	k, secret := auth.NewKey(f.a, name, api.RoleAdmin)
	if err := f.st.CreateKey(tenancy.System(f.ctx), k); err != nil {
		t.Fatal(err)
	}
	return k.ID, secret
}

// keyOf creates a key of role with the key from, through the API.
func (f *apiFixture) keyOf(t *testing.T, from, name, role string) (id, secret string) {
	t.Helper()
	var k api.Key
	body := `{"name":"` + name + `","role":"` + role + `"}`
	if status, code := f.rawAs(t, from, "POST", "/v1/keys", body, &k); status != http.StatusCreated {
		t.Fatalf("create a %s key: %d %s", role, status, code)
	}
	return k.ID, k.Secret
}

func keyID(t *testing.T, key string) string {
	t.Helper()
	id, _, err := auth.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// works reports whether key still authenticates.
func (f *apiFixture) works(t *testing.T, key string) bool {
	t.Helper()
	status, _ := f.rawAs(t, key, "GET", "/v1/keys", "", nil)
	return status == http.StatusOK
}

// TestKeyRoles: a key can neither make nor revoke a key more powerful than
// itself; every key records the key that made it; the last admin key
// stays.
func TestKeyRoles(t *testing.T) {
	f := newAPIFixture(t)
	adminID, admin := f.adminKey(t, "admin")

	// A member cannot revoke the admin key (it could lock every admin out).
	if status, code := f.rawAs(t, f.keyA, "DELETE", "/v1/keys/"+adminID, "", nil); status != http.StatusForbidden || code != "admin_required" {
		t.Errorf("member deletes the admin key: %d %s, want 403 admin_required", status, code)
	}
	if !f.works(t, admin) {
		t.Fatal("the admin key was deleted by a member")
	}
	// Nor make one.
	if status, code := f.rawAs(t, f.keyA, "POST", "/v1/keys", `{"role":"admin"}`, nil); status != http.StatusForbidden || code != "admin_required" {
		t.Errorf("member creates an admin key: %d %s, want 403 admin_required", status, code)
	}

	// A member makes a reader; a reader makes nothing and revokes nothing.
	readerID, reader := f.keyOf(t, f.keyA, "ro", api.RoleReader)
	for _, tt := range []struct{ method, path, body string }{
		{"POST", "/v1/keys", `{"role":"reader"}`},
		{"POST", "/v1/keys", `{"role":"member"}`},
		{"POST", "/v1/keys", `{"role":"admin"}`},
		{"DELETE", "/v1/keys/" + keyID(t, f.keyA), ""},
		{"DELETE", "/v1/keys/" + readerID, ""},
	} {
		if status, code := f.rawAs(t, reader, tt.method, tt.path, tt.body, nil); status != http.StatusForbidden || code != "member_required" {
			t.Errorf("reader: %s %s %s: %d %s, want 403 member_required", tt.method, tt.path, tt.body, status, code)
		}
	}
	if status, code := f.rawAs(t, f.keyA, "POST", "/v1/tenants", `{"name":"evil"}`, nil); status != http.StatusForbidden || code != "admin_required" {
		t.Errorf("member creates a tenant: %d %s, want 403 admin_required", status, code)
	}

	// Every key records its creator.
	var k map[string]any
	if status, code := f.rawAs(t, f.keyA, "POST", "/v1/keys", `{"name":"ci"}`, &k); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, code)
	}
	if k["created_by"] != keyID(t, f.keyA) {
		t.Errorf("created_by = %v, want %s", k["created_by"], keyID(t, f.keyA))
	}
	var list struct{ Keys []map[string]any }
	f.rawAs(t, f.keyA, "GET", "/v1/keys", "", &list)
	for _, lk := range list.Keys {
		if lk["id"] == k["id"] && lk["created_by"] != keyID(t, f.keyA) {
			t.Errorf("listed created_by = %v, want %s", lk["created_by"], keyID(t, f.keyA))
		}
	}

	// The last admin key cannot go; once there is another, it can.
	if status, code := f.rawAs(t, admin, "DELETE", "/v1/keys/"+adminID, "", nil); status != http.StatusConflict || code != "last_admin_key" {
		t.Errorf("deleting the last admin key: %d %s, want 409 last_admin_key", status, code)
	}
	id2, admin2 := f.keyOf(t, admin, "admin2", api.RoleAdmin)
	if status, code := f.rawAs(t, admin2, "DELETE", "/v1/keys/"+adminID, "", nil); status != http.StatusNoContent {
		t.Errorf("deleting an admin key while another remains: %d %s", status, code)
	}
	if status, code := f.rawAs(t, admin2, "DELETE", "/v1/keys/"+id2, "", nil); status != http.StatusConflict || code != "last_admin_key" {
		t.Errorf("deleting the last admin key, its own: %d %s, want 409 last_admin_key", status, code)
	}
	// Any other key may revoke itself; the answer still arrives.
	selfID, self := f.keyOf(t, f.keyA, "self", api.RoleMember)
	if status, code := f.rawAs(t, self, "DELETE", "/v1/keys/"+selfID, "", nil); status != http.StatusNoContent || f.works(t, self) {
		t.Errorf("a key revoking itself: %d %s", status, code)
	}
}

// TestRevokeCascade: revoking a leaked key with cascade=true revokes every
// key its holder made with it, even through a key the holder revoked to
// break the chain; keys it did not make stay.
func TestRevokeCascade(t *testing.T) {
	f := newAPIFixture(t)
	leakedID, leaked := f.keyOf(t, f.keyA, "leaked", api.RoleMember)
	_, sibling := f.keyOf(t, f.keyA, "sibling", api.RoleMember)
	childID, child := f.keyOf(t, leaked, "child", api.RoleMember)
	_, grandchild := f.keyOf(t, child, "grandchild", api.RoleReader)
	_, hidden := f.keyOf(t, child, "hidden", api.RoleMember)
	// The holder revokes the middle key to cut hidden off from leaked.
	if status, code := f.rawAs(t, leaked, "DELETE", "/v1/keys/"+childID, "", nil); status != http.StatusNoContent {
		t.Fatalf("delete child: %d %s", status, code)
	}
	if f.works(t, child) || !f.works(t, grandchild) || !f.works(t, hidden) {
		t.Fatal("a delete without cascade revoked more or less than the key")
	}

	if status, code := f.rawAs(t, f.keyA, "DELETE", "/v1/keys/"+leakedID+"?cascade=true", "", nil); status != http.StatusNoContent {
		t.Fatalf("cascade delete: %d %s", status, code)
	}
	for name, key := range map[string]string{"leaked": leaked, "grandchild": grandchild, "hidden": hidden} {
		if f.works(t, key) {
			t.Errorf("%s still works after its ancestor was revoked with cascade", name)
		}
	}
	for name, key := range map[string]string{"the revoker": f.keyA, "a sibling": sibling} {
		if !f.works(t, key) {
			t.Errorf("%s was revoked by a cascade it is not part of", name)
		}
	}
	if status, code := f.rawAs(t, f.keyA, "DELETE", "/v1/keys/"+leakedID+"?cascade=yes", "", nil); status != http.StatusBadRequest || code != "invalid_request" {
		t.Errorf("cascade=yes: %d %s, want 400 invalid_request", status, code)
	}

	// Through the client.
	_, k := f.keyOf(t, f.keyA, "k", api.RoleMember)
	made, err := client.New(f.srv.URL, k).CreateKey(f.ctx, api.CreateKeyRequest{Name: "made"})
	if err != nil {
		t.Fatal(err)
	}
	if made.CreatedBy != keyID(t, k) {
		t.Errorf("CreatedBy = %q, want %s", made.CreatedBy, keyID(t, k))
	}
	if err := f.ca.DeleteKeyCascade(f.ctx, keyID(t, k)); err != nil {
		t.Fatal(err)
	}
	if f.works(t, made.Secret) {
		t.Error("DeleteKeyCascade left a key the revoked key made")
	}
}

// TestReaderOnlyReads: a reader key reads its tenant's resources and
// changes none of them.
func TestReaderOnlyReads(t *testing.T) {
	f := newAPIFixture(t)
	sb := f.sandbox(t)
	if _, err := f.ca.WriteFile(f.ctx, sb.ID, "x", 0o644, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	p, err := f.ca.StartProcess(f.ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.CreateSecret(f.ctx, api.CreateSecretRequest{Name: "s", Value: "v"}); err != nil && client.StatusCode(err) != http.StatusServiceUnavailable {
		t.Fatal(err)
	}
	_, reader := f.keyOf(t, f.keyA, "ro", api.RoleReader)
	sbp := "/v1/sandboxes/" + sb.ID
	pp := sbp + "/processes/" + strconv.Itoa(p.PID)

	for _, tt := range []struct{ method, path, body string }{
		{"POST", "/v1/sandboxes", `{}`},
		{"DELETE", sbp, ""},
		{"POST", sbp + "/stop", ""},
		{"POST", sbp + "/start", ""},
		{"PUT", sbp + "/network", `{"mode":"none"}`},
		{"POST", sbp + "/exec", `{"cmd":["touch","y"]}`},
		{"POST", sbp + "/exec/stream", `{"cmd":["touch","y"]}`},
		{"POST", sbp + "/processes", `{"cmd":["touch","y"]}`},
		{"POST", pp + "/stdin", "x"},
		{"POST", pp + "/signal", `{"signal":"KILL"}`},
		{"POST", pp + "/resize", `{"rows":1,"cols":1}`},
		{"GET", pp + "/terminal", ""},
		{"GET", sbp + "/terminal?cmd=touch&cmd=y", ""},
		{"PUT", sbp + "/ports/3000", `{"public":true}`},
		{"POST", sbp + "/ports/3000/url", `{}`},
		{"PUT", sbp + "/files?path=y", "y"},
		{"DELETE", sbp + "/files?path=x", ""},
		{"POST", sbp + "/files/mkdir", `{"path":"d"}`},
		{"POST", sbp + "/files/move", `{"from":"x","to":"z"}`},
		{"PUT", sbp + "/files/tar?path=.", ""},
		{"POST", "/v1/secrets", `{"name":"t","value":"v"}`},
		{"PUT", "/v1/secrets/s", `{"value":"w"}`},
		{"DELETE", "/v1/secrets/s", ""},
		{"POST", "/v1/keys", `{"role":"reader"}`},
	} {
		if status, code := f.rawAs(t, reader, tt.method, tt.path, tt.body, nil); status != http.StatusForbidden || code != "member_required" {
			t.Errorf("reader: %s %s: %d %s, want 403 member_required", tt.method, tt.path, status, code)
		}
	}
	for _, path := range []string{
		"/v1/info", "/v1/keys", "/v1/sandboxes", sbp, sbp + "/network", sbp + "/events", "/v1/events",
		sbp + "/processes", pp, pp + "/output", pp + "/wait?timeout_ms=1", sbp + "/ports",
		sbp + "/files?path=x", sbp + "/files/list?path=.", sbp + "/files/stat?path=x",
		sbp + "/files/tar?path=.",
	} {
		// Some answer otherwise for their own reasons (no preview router
		// here): what matters is that none is refused for the role.
		if status, code := f.rawAs(t, reader, "GET", path, "", nil); status == http.StatusForbidden {
			t.Errorf("reader: GET %s: %d %s, want it served", path, status, code)
		}
	}
	// Nothing changed.
	got, err := f.ca.GetSandbox(f.ctx, sb.ID)
	if err != nil || got.State != api.StateRunning {
		t.Errorf("sandbox after the reader: %+v, %v", got, err)
	}
	if _, err := f.ca.StatFile(f.ctx, sb.ID, "y"); !client.IsNotFound(err) {
		t.Errorf("y: %v, want not found: a reader wrote it", err)
	}
	if pr, err := f.ca.GetProcess(f.ctx, sb.ID, p.PID); err != nil || !pr.Running {
		t.Errorf("process after the reader: %+v, %v", pr, err)
	}
}

// TestRouteRoles holds the route table to the role model: what a reader
// may call only reads (a GET, and not a terminal, which runs a command);
// making, changing, suspending and deleting tenants takes an admin.
func TestRouteRoles(t *testing.T) {
	for _, r := range (&API{}).routes() {
		name := r.method + " " + r.pattern
		switch {
		case r.role != "" && !tenancy.ValidRole(r.role):
			t.Errorf("%s: unknown role %q", name, r.role)
		case r.role == api.RoleReader && (r.method != http.MethodGet || strings.HasSuffix(r.pattern, "/terminal")):
			t.Errorf("%s is open to readers, but it changes something", name)
		case strings.HasPrefix(r.pattern, "/v1/tenants") && r.method != http.MethodGet && r.role != api.RoleAdmin:
			t.Errorf("%s takes role %q, want admin", name, r.role)
		}
	}
}
