package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestDiskFull: a sandbox fills the filesystem it shares with hutch's own
// state. Other tenants' creates are refused with 507 and the reason (they
// were 500s once the database could not be written), the API goes on
// answering, the sandbox can still be used and destroyed, and once it
// frees the space creates work again.
func TestDiskFull(t *testing.T) {
	base := t.TempDir()
	if err := unix.Mount("tmpfs", base, "tmpfs", 0, "size=160m,mode=0700"); err != nil {
		t.Skip("tmpfs:", err)
	}
	t.Cleanup(func() { unix.Unmount(base, unix.MNT_DETACH) })
	s := startServer(t, filepath.Join(base, "data"), "--driver", "namespace", "--disk-reserve", "8388608", "--warm-pool", "0")
	ctx := context.Background()
	admin := s.client()
	other, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	theirs := client.New(s.url, other.Key.Secret)
	hog, err := admin.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{MemoryMB: 512}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := admin.Exec(ctx, hog.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "dd if=/dev/zero of=/workspace/big bs=1M 2>&1; df -k /workspace | tail -1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the sandbox filled its disk: %s", res.Stdout)
	time.Sleep(1100 * time.Millisecond) // past the guard's cache
	_, err = theirs.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if client.StatusCode(err) != 507 || client.Code(err) != "insufficient_storage" {
		t.Fatalf("another tenant's create on a full disk = %v (status %d); want 507 insufficient_storage", err, client.StatusCode(err))
	}
	if _, err := theirs.Info(ctx); err != nil {
		t.Fatalf("the API stopped answering: %v", err)
	}
	if _, err := theirs.ListSandboxes(ctx, client.ListOptions{}); err != nil {
		t.Fatalf("list on a full disk: %v", err)
	}
	if res, err := admin.Exec(ctx, hog.ID, api.ExecRequest{Cmd: []string{"rm", "/workspace/big"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("freeing the space: %+v, %v", res, err)
	}
	var sb *api.Sandbox
	for deadline := time.Now().Add(10 * time.Second); ; {
		if sb, err = theirs.CreateSandbox(ctx, api.CreateSandboxRequest{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create after the space was freed: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := theirs.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}
