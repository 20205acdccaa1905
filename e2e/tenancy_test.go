package e2e

import (
	"context"
	"testing"

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
