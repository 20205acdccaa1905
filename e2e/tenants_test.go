package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestTenantLife against the real binary: an admin suspends a tenant
// with the CLI (its sandboxes stop, its creates are refused, its reads
// work), resumes it, then deletes it and kills the server at once, as a
// crash would; the next start finishes the deletion, wherever the crash
// cut it, and hutch tenant delete reports it done: the tenant's key is
// refused, its sandboxes' directories are gone, and its record stays.
func TestTenantLife(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	admin := s.client()
	tn, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	acme := client.New(s.url, tn.Key.Secret)
	var sbs []*api.Sandbox
	for range 3 {
		sb, err := acme.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		sbs = append(sbs, sb)
	}
	if _, err := acme.WriteFile(ctx, sbs[0].ID, "kept", 0o644, strings.NewReader("kept")); err != nil {
		t.Fatal(err)
	}
	if _, err := acme.CreateSecret(ctx, api.CreateSecretRequest{Name: "TOKEN", Value: api.SecretValue("s3cret")}); err != nil {
		t.Fatal(err)
	}

	if out, errOut, code := s.cli("", "tenant", "suspend", tn.ID); code != 0 || strings.TrimSpace(out) != tn.ID {
		t.Fatalf("hutch tenant suspend: exit %d\n%s%s", code, out, errOut)
	}
	_, err = acme.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if client.StatusCode(err) != http.StatusForbidden || client.Code(err) != "tenant_suspended" {
		t.Fatalf("a suspended tenant creates: %v; want 403 tenant_suspended", err)
	}
	for _, sb := range sbs {
		if got, err := acme.GetSandbox(ctx, sb.ID); err != nil || got.State != api.StateStopped {
			t.Fatalf("a suspended tenant's sandbox: %+v, %v; want it read, stopped", got, err)
		}
	}
	if _, errOut, code := s.cli("", "tenant", "resume", tn.ID); code != 0 {
		t.Fatalf("hutch tenant resume: exit %d %s", code, errOut)
	}
	if _, err := acme.StartSandbox(ctx, sbs[0].ID); err != nil {
		t.Fatalf("the resumed tenant starts a sandbox: %v", err)
	}

	if d, err := admin.DeleteTenant(ctx, tn.ID); err != nil || d.State == api.TenantActive {
		t.Fatalf("DELETE: %+v, %v", d, err)
	}
	s.kill()
	s = startServer(t, s.dataDir)
	out, errOut, code := s.cli("", "tenant", "delete", tn.ID)
	if code != 0 || strings.TrimSpace(out) != tn.ID || !strings.Contains(errOut, `tenant "acme" deleted`) {
		t.Fatalf("hutch tenant delete after the restart: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("after the restart: %s", strings.TrimSpace(errOut))

	got, err := s.client().GetTenant(ctx, tn.ID)
	if err != nil || got.State != api.TenantDeleted || got.Deletion == nil || got.Deletion.FinishedAt == nil {
		t.Fatalf("the deleted tenant's record: %+v, %v", got, err)
	}
	if r := got.Deletion.Removed; r.Keys != 1 || r.Sandboxes != len(sbs) || r.Secrets != 1 {
		t.Errorf("removed %+v; want its key, %d sandboxes and its secret", r, len(sbs))
	}
	if _, err := client.New(s.url, tn.Key.Secret).ListSandboxes(ctx, client.ListOptions{}); client.StatusCode(err) != http.StatusUnauthorized {
		t.Errorf("the deleted tenant's key: %v; want 401", err)
	}
	for _, sb := range sbs {
		dir := filepath.Join(s.dataDir, "sandboxes", sb.Driver, sb.ID)
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("sandbox %s's directory %s: %v; want it gone", sb.ID, dir, err)
		}
	}
	evs, err := s.client().Events(ctx, client.EventQuery{Types: []string{api.EventTenantDeleted}})
	if err != nil || len(evs.Events) != 1 || evs.Events[0].Data["tenant_id"] != tn.ID {
		t.Errorf("the admin's log: %+v, %v; want tenant.deleted", evs, err)
	}
	// Deleted, it stays deleted: the same answer, every time.
	again, err := s.client().DeleteTenant(ctx, tn.ID)
	if err != nil || again.State != api.TenantDeleted || !again.Deletion.FinishedAt.Equal(*got.Deletion.FinishedAt) {
		t.Errorf("a DELETE after the end: %+v, %v", again, err)
	}
}
