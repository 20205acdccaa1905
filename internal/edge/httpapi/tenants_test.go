package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/store"
)

// adminTenant stores a tenant named name holding one admin key, as the
// first start makes the admin tenant, and returns its id and the key.
func (f *apiFixture) adminTenant(t *testing.T, name string) (id, key string) {
	t.Helper()
	tn := store.Tenant{ID: ids.New(), Name: name}
	k, secret := auth.NewKey(tn.ID, "admin", api.RoleAdmin)
	if err := f.st.CreateTenant(tenancy.System(f.ctx), tn, k); err != nil {
		t.Fatal(err)
	}
	return tn.ID, secret
}

// TestTenantSuspend: only an admin suspends and resumes a tenant, never
// its own or the admin tenant; a suspended tenant's sandboxes stop, its
// keys still read and are refused everything else with 403
// tenant_suspended, at the API and at the sandbox service alike; resumed,
// it works again with its sandboxes still stopped.
func TestTenantSuspend(t *testing.T) {
	f := newAPIFixture(t)
	adminID, adminKey := f.adminTenant(t, auth.AdminTenant)
	_, opsKey := f.adminTenant(t, "ops")
	admin := client.New(f.srv.URL, adminKey)
	ctx := f.ctx
	running := f.sandbox(t)
	stopped := f.sandbox(t)
	if _, err := f.ca.StopSandbox(ctx, stopped.ID); err != nil {
		t.Fatal(err)
	}
	third := f.sandbox(t)
	sbOfB, err := f.cb.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		who, key, method, path, code string
		status                       int
	}{
		{"a member of another tenant", f.keyB, "POST", "/v1/tenants/" + f.a + "/suspend", "admin_required", 403},
		{"the tenant's own member", f.keyA, "POST", "/v1/tenants/" + f.a + "/suspend", "admin_required", 403},
		{"a member", f.keyB, "POST", "/v1/tenants/" + f.a + "/resume", "admin_required", 403},
		{"the admin, its own tenant", adminKey, "POST", "/v1/tenants/" + adminID + "/suspend", "tenant_protected", 403},
		{"another admin tenant, the admin tenant", opsKey, "POST", "/v1/tenants/" + adminID + "/suspend", "tenant_protected", 403},
		{"the admin, a tenant that is not", adminKey, "POST", "/v1/tenants/" + ids.New() + "/suspend", "tenant_not_found", 404},
	} {
		if status, code := f.rawAs(t, c.key, c.method, c.path, "", nil); status != c.status || code != c.code {
			t.Errorf("%s: %s %s = %d %s, want %d %s", c.who, c.method, c.path, status, code, c.status, c.code)
		}
	}

	tn, err := admin.SuspendTenant(ctx, f.a)
	if err != nil || tn.State != api.TenantSuspended || tn.ID != f.a {
		t.Fatalf("suspend: %+v, %v", tn, err)
	}
	for _, id := range []string{running.ID, stopped.ID, third.ID} {
		if sb, err := f.ca.GetSandbox(ctx, id); err != nil || sb.State != api.StateStopped {
			t.Errorf("sandbox %s of the suspended tenant: %+v, %v; want it read, stopped", id, sb, err)
		}
	}
	if sb, err := f.cb.GetSandbox(ctx, sbOfB.ID); err != nil || sb.State != api.StateRunning {
		t.Errorf("another tenant's sandbox: %+v, %v; want it running", sb, err)
	}
	if tn, err := f.ca.GetTenant(ctx, f.a); err != nil || tn.State != api.TenantSuspended {
		t.Errorf("the suspended tenant reads itself: %+v, %v", tn, err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/sandboxes", "{}"},
		{"POST", "/v1/sandboxes/" + stopped.ID + "/start", ""},
		{"DELETE", "/v1/sandboxes/" + stopped.ID, ""},
		{"POST", "/v1/keys", `{"name":"x"}`},
	} {
		if status, code := f.rawAs(t, f.keyA, c.method, c.path, c.body, nil); status != http.StatusForbidden || code != "tenant_suspended" {
			t.Errorf("suspended: %s %s = %d %s, want 403 tenant_suspended", c.method, c.path, status, code)
		}
	}
	// Below the API, the sandbox service and the store refuse it too.
	as := tenancy.With(ctx, tenancy.Principal{TenantID: f.a, Role: api.RoleMember})
	if _, err := f.svc.Create(as, api.CreateSandboxRequest{}); !hasCode(err, "tenant_suspended") {
		t.Errorf("the sandbox service creates for a suspended tenant: %v", err)
	}
	if _, err := f.svc.Start(as, stopped.ID); !hasCode(err, "tenant_suspended") {
		t.Errorf("the sandbox service starts for a suspended tenant: %v", err)
	}
	if tn, err := admin.SuspendTenant(ctx, f.a); err != nil || tn.State != api.TenantSuspended {
		t.Errorf("suspend again: %+v, %v", tn, err)
	}
	if _, err := f.cb.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil {
		t.Errorf("another tenant creates: %v", err)
	}

	tn, err = admin.ResumeTenant(ctx, f.a)
	if err != nil || tn.State != api.TenantActive {
		t.Fatalf("resume: %+v, %v", tn, err)
	}
	if sb, err := f.ca.GetSandbox(ctx, running.ID); err != nil || sb.State != api.StateStopped {
		t.Errorf("after resume a sandbox is %+v, %v; want it stopped still", sb, err)
	}
	if _, err := f.ca.StartSandbox(ctx, running.ID); err != nil {
		t.Errorf("the resumed tenant starts a sandbox: %v", err)
	}
	if _, err := f.ca.CreateSandbox(ctx, api.CreateSandboxRequest{}); err != nil {
		t.Errorf("the resumed tenant creates a sandbox: %v", err)
	}
	if tn, err := admin.ResumeTenant(ctx, f.a); err != nil || tn.State != api.TenantActive {
		t.Errorf("resume an active tenant: %+v, %v", tn, err)
	}

	evs, err := admin.Events(ctx, client.EventQuery{Types: []string{api.EventTenantSuspended, api.EventTenantResumed}})
	if err != nil || len(evs.Events) != 4 || evs.Events[0].Data["tenant_id"] != f.a {
		t.Errorf("the admin's log: %+v, %v; want two suspensions and two resumptions of tenant a", evs, err)
	}
}

// TestTenantDelete: only an admin deletes a tenant, never its own or the
// admin tenant; the deletion revokes the tenant's keys (ending their
// requests), destroys its sandboxes and erases its records (sandboxes,
// apps, templates, volumes, secrets, events) and nothing of another
// tenant's, keeps the tenant as a record of who deleted it and when, and
// records tenant.deleted in the admin's log; a second DELETE answers the
// same.
func TestTenantDelete(t *testing.T) {
	f := newAPIFixture(t)
	adminID, adminKey := f.adminTenant(t, auth.AdminTenant)
	admin := client.New(f.srv.URL, adminKey)
	ctx := f.ctx
	sbs := []*api.Sandbox{f.sandbox(t), f.sandbox(t), f.sandbox(t)}
	if err := f.ca.DeleteSandbox(ctx, sbs[2].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.StopSandbox(ctx, sbs[1].ID); err != nil {
		t.Fatal(err)
	}
	sbOfB, err := f.cb.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// What has no door on this fixture's server goes in through the store.
	as := tenancy.With(ctx, tenancy.Principal{TenantID: f.a, Role: api.RoleMember})
	for _, err := range []error{
		f.st.CreateTemplate(as, &store.Template{Name: "img", Source: "x", Digest: "sha256:" + strings.Repeat("d", 64), Layers: []string{"sha256:" + strings.Repeat("1", 64)}}),
		f.st.CreateVolume(as, &store.Volume{Name: "data", SizeMB: 1}),
		f.st.CreateSecret(as, &store.Secret{Name: "TOKEN", KeyID: "k", Nonce: []byte("n"), Ciphertext: []byte("c")}),
		f.st.CreateApp(as, &store.App{Name: "shop-" + ids.Token(4), Preset: "static"}),
		f.st.AppendEvent(as, &store.Event{Type: "note", Message: "about the tenant, no sandbox"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	stream, err := f.ca.StreamEvents(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	streamEnded := make(chan struct{})
	go func() {
		defer close(streamEnded)
		for {
			if _, err := stream.Next(); err != nil {
				return
			}
		}
	}()

	for _, c := range []struct {
		who, key, path, code string
		status               int
	}{
		{"its own member", f.keyA, "/v1/tenants/" + f.a, "admin_required", 403},
		{"another tenant's member", f.keyB, "/v1/tenants/" + f.a, "admin_required", 403},
		{"the admin, its own tenant", adminKey, "/v1/tenants/" + adminID, "tenant_protected", 403},
		{"the admin, a tenant that is not", adminKey, "/v1/tenants/" + ids.New(), "tenant_not_found", 404},
	} {
		if status, code := f.rawAs(t, c.key, "DELETE", c.path, "", nil); status != c.status || code != c.code {
			t.Errorf("%s: DELETE %s = %d %s, want %d %s", c.who, c.path, status, code, c.status, c.code)
		}
	}

	var first api.Tenant
	if status, code := f.rawAs(t, adminKey, "DELETE", "/v1/tenants/"+f.a, "", &first); status != http.StatusAccepted ||
		first.State != api.TenantDeleting || first.Deletion == nil || first.Deletion.By != keyID(t, adminKey) {
		t.Fatalf("DELETE = %d %s %+v; want 202 with the tenant deleting, by the admin's key", status, code, first)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var steps []string
	done, err := admin.WaitTenantDeleted(wctx, f.a, func(t *api.Tenant) { steps = append(steps, t.Deletion.Step) })
	if err != nil {
		t.Fatalf("wait for the deletion: %v (steps seen %v)", err, steps)
	}
	d := done.Deletion
	want := api.TenantRemoved{Keys: 1, Apps: 1, Sandboxes: 3, Templates: 1, Volumes: 1, Secrets: 1}
	got := d.Removed
	if got.Events == 0 {
		t.Error("no event erased; the tenant's own were there (the sandboxes' go with their records)")
	}
	got.Events = 0
	if diff := cmp.Diff(want, got); diff != "" || d.Step != api.DeleteStepDone || d.FinishedAt == nil ||
		d.ByTenant != adminID || d.Error != "" || d.StartedAt.After(*d.FinishedAt) {
		t.Errorf("the deletion's record %+v (-want +got removed):\n%s", d, diff)
	}

	select {
	case <-streamEnded:
	case <-time.After(10 * time.Second):
		t.Error("the deleted tenant's event stream outlived its key")
	}
	if status, code := f.rawAs(t, f.keyA, "GET", "/v1/sandboxes", "", nil); status != http.StatusUnauthorized || code != "invalid_api_key" {
		t.Errorf("the deleted tenant's key: %d %s, want 401 invalid_api_key", status, code)
	}
	for _, sb := range sbs {
		if _, err := f.st.GetSandbox(as, sb.ID); !hasCode(err, "sandbox_not_found") {
			t.Errorf("sandbox %s's record after the deletion: %v", sb.ID, err)
		}
	}
	for _, id := range f.drv.Live() {
		if id != sbOfB.ID {
			t.Errorf("sandbox %s lives on in the driver", id)
		}
	}
	tmpls, _ := f.st.ListTemplates(as)
	vols, _ := f.st.ListVolumes(as)
	secs, _ := f.st.ListSecrets(as)
	apps, _ := f.st.ListApps(as)
	evs, _, _ := f.st.ListEvents(as, store.EventQuery{})
	keys, _ := f.st.ListKeys(as)
	if n := len(tmpls) + len(vols) + len(secs) + len(apps) + len(evs) + len(keys); n != 0 {
		t.Errorf("%d rows of the deleted tenant are left", n)
	}
	if sb, err := f.cb.GetSandbox(ctx, sbOfB.ID); err != nil || sb.State != api.StateRunning {
		t.Errorf("another tenant's sandbox: %+v, %v", sb, err)
	}

	again, err := admin.DeleteTenant(ctx, f.a)
	if err != nil || !cmp.Equal(again, done) {
		t.Errorf("a second DELETE = %+v, %v; want the same record %+v", again, err, done)
	}
	if status, _ := f.rawAs(t, adminKey, "DELETE", "/v1/tenants/"+f.a, "", nil); status != http.StatusOK {
		t.Errorf("a second DELETE: %d, want 200", status)
	}
	if _, err := admin.SuspendTenant(ctx, f.a); !hasCode(err, "tenant_state_conflict") {
		t.Errorf("suspend a deleted tenant: %v, want 409 tenant_state_conflict", err)
	}
	evsAdmin, err := admin.Events(ctx, client.EventQuery{Types: []string{api.EventTenantDeleted}})
	if err != nil || len(evsAdmin.Events) != 1 || evsAdmin.Events[0].Data["tenant_id"] != f.a || evsAdmin.Events[0].Data["name"] != "a" {
		t.Errorf("the admin's log: %+v, %v; want one tenant.deleted of tenant a", evsAdmin, err)
	}
}

// hasCode reports whether err, the client's or the service's, carries
// the stable code.
func hasCode(err error, code string) bool {
	return client.Code(err) == code || errdefs.HasCode(err, code)
}
