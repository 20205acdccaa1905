package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestTenancy: a tenant sees only its own sandboxes and keys; only admins
// make tenants and admin keys.
func TestTenancy(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	admin := s.client()
	tenant, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if tenant.Key == nil || tenant.Key.Secret == "" || tenant.Key.Role != api.RoleMember {
		t.Fatalf("new tenant's key = %+v", tenant.Key)
	}
	acme := client.New(s.url, tenant.Key.Secret)

	theirs, err := acme.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The server's clean-up sees only the admin's sandboxes.
	t.Cleanup(func() { _ = acme.DeleteSandbox(context.Background(), theirs.ID) })
	ours, err := admin.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// Another tenant's sandbox is not found, whatever the call.
	if _, err := admin.GetSandbox(ctx, theirs.ID); !client.IsNotFound(err) {
		t.Fatalf("admin GET of acme's sandbox: %v, want not found", err)
	}
	if _, err := acme.Exec(ctx, ours.ID, api.ExecRequest{Cmd: []string{"true"}}); !client.IsNotFound(err) {
		t.Fatalf("acme exec in admin's sandbox: %v, want not found", err)
	}
	if _, err := acme.ReadFile(ctx, ours.ID, "x"); !client.IsNotFound(err) {
		t.Fatalf("acme read in admin's sandbox: %v, want not found", err)
	}
	if err := acme.DeleteSandbox(ctx, ours.ID); !client.IsNotFound(err) {
		t.Fatalf("acme delete of admin's sandbox: %v, want not found", err)
	}
	page, err := acme.ListSandboxes(ctx, client.ListOptions{})
	if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != theirs.ID {
		t.Fatalf("acme's list = %+v, %v", page, err)
	}

	// Keys: a member makes member keys, not admin keys or tenants.
	if _, err := acme.CreateKey(ctx, api.CreateKeyRequest{Role: api.RoleAdmin}); !client.IsForbidden(err) {
		t.Fatalf("member creating an admin key: %v, want forbidden", err)
	}
	if _, err := acme.CreateTenant(ctx, api.CreateTenantRequest{Name: "evil"}); !client.IsForbidden(err) {
		t.Fatalf("member creating a tenant: %v, want forbidden", err)
	}
	k, err := acme.CreateKey(ctx, api.CreateKeyRequest{Name: "ci"})
	if err != nil || k.Secret == "" {
		t.Fatalf("create key = %+v, %v", k, err)
	}
	keys, err := acme.ListKeys(ctx)
	if err != nil || len(keys.Keys) != 2 {
		t.Fatalf("acme's keys = %+v, %v", keys, err)
	}
	for _, key := range keys.Keys {
		if key.Secret != "" {
			t.Fatal("a listed key shows its secret")
		}
	}
	if err := admin.DeleteKey(ctx, k.ID); !client.IsNotFound(err) {
		t.Fatalf("admin deleting acme's key: %v, want not found", err)
	}
	if err := acme.DeleteKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(s.url, k.Secret).ListSandboxes(ctx, client.ListOptions{}); !client.IsUnauthorized(err) {
		t.Fatalf("deleted key still works: %v", err)
	}
}

// TestTenancyKeyRoles: against the real binary, a member cannot revoke the
// admin key, the last admin key stays, a reader only reads, `hutch key rm
// --cascade` revokes what a leaked key made, and a revoked key's open
// stream ends.
func TestTenancyKeyRoles(t *testing.T) {
	s := startServer(t, "")
	ctx := context.Background()
	admin := s.client()
	adminID := strings.Split(s.key, "_")[1]

	m, err := admin.CreateKey(ctx, api.CreateKeyRequest{Name: "member"})
	if err != nil || m.CreatedBy != adminID {
		t.Fatalf("member key = %+v, %v; want it made by %s", m, err, adminID)
	}
	member := client.New(s.url, m.Secret)
	if err := member.DeleteKey(ctx, adminID); client.Code(err) != "admin_required" {
		t.Fatalf("member revokes the admin key: %v, want admin_required", err)
	}
	if err := admin.DeleteKey(ctx, adminID); client.Code(err) != "last_admin_key" {
		t.Fatalf("admin revokes the last admin key: %v, want last_admin_key", err)
	}

	r, err := member.CreateKey(ctx, api.CreateKeyRequest{Name: "ro", Role: api.RoleReader})
	if err != nil {
		t.Fatal(err)
	}
	reader := client.New(s.url, r.Secret)
	if _, err := reader.ListSandboxes(ctx, client.ListOptions{}); err != nil {
		t.Fatalf("reader lists sandboxes: %v", err)
	}
	if _, err := reader.CreateSandbox(ctx, api.CreateSandboxRequest{}); client.Code(err) != "member_required" {
		t.Fatalf("reader creates a sandbox: %v, want member_required", err)
	}

	// The member key leaks: its holder makes a key of its own and follows
	// the event stream. The CLI revokes both; the stream ends.
	made, err := member.CreateKey(ctx, api.CreateKeyRequest{Name: "hideout"})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := s.cli("", "key", "ls")
	if code != 0 || !strings.Contains(out, "CREATED BY") || !strings.Contains(out, made.ID) {
		t.Fatalf("key ls: %d %s %s", code, out, errOut)
	}
	es, err := client.New(s.url, made.Secret).StreamEvents(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := es.Next(); err != nil {
				ended <- err
				return
			}
		}
	}()
	if _, errOut, code := s.cli("", "key", "rm", "--cascade", m.ID); code != 0 {
		t.Fatalf("key rm --cascade: %d %s", code, errOut)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second): // a hang detector
		t.Fatal("the event stream of a revoked key goes on")
	}
	for name, key := range map[string]string{"member": m.Secret, "its key": made.Secret, "its reader": r.Secret} {
		if _, err := client.New(s.url, key).ListSandboxes(ctx, client.ListOptions{}); !client.IsUnauthorized(err) {
			t.Errorf("%s after the cascade: %v, want unauthorized", name, err)
		}
	}
	if _, err := admin.ListKeys(ctx); err != nil {
		t.Errorf("the admin key after the cascade: %v", err)
	}
}
