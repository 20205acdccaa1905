package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestDiskWatch is the review's attack on a filesystem without quotas
// (ext4, as most hosts have): a sandbox writes past its disk limit, and a
// tenant's sandboxes past the tenant's disk_mb, until the disk is full
// and every other tenant's create is 507. hutch measures the files
// instead: the sandbox past its limit is stopped, its tenant's next
// create past its disk is 429 quota_exceeded, a sandbox that grows while
// its tenant is past it is stopped, and another tenant's creates go on.
func TestDiskWatch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a loop device, the namespace driver's id-mapped mounts); CI runs as root")
	}
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "ext4", Size: 1 << 30})
	s := startServer(t, filepath.Join(fs.Dir, "data"), "--driver", "namespace", "--warm-pool", "0")
	ctx := context.Background()
	admin := s.client()
	tn, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	acme := client.New(s.url, tn.Key.Secret)
	t.Cleanup(func() {
		for sb, err := range acme.AllSandboxes(context.Background(), client.ListOptions{}) {
			if err != nil {
				break
			}
			acme.DeleteSandbox(context.Background(), sb.ID)
		}
	})
	disk := 96
	if _, err := admin.SetTenantQuotas(ctx, tn.ID, api.Quotas{DiskMB: &disk}); err != nil {
		t.Fatal(err)
	}
	stoppedFor := func(id, reason string) bool {
		evs, err := acme.SandboxEvents(ctx, id, client.EventQuery{Types: []string{api.EventSandboxStopped}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Events {
			if e.Data["reason"] == reason {
				t.Logf("%s: %s", id, e.Message)
				return true
			}
		}
		return false
	}
	within := func(what string, patience time.Duration, cond func() bool) bool {
		t.Helper()
		for deadline := time.Now().Add(patience); !cond(); time.Sleep(250 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("%s: not within %s", what, patience)
				return false
			}
		}
		return true
	}

	// A sandbox writes 4 MiB every 0.2 s, past its limit of 32 MiB. (Best
	// effort, so that the same request is taken where no measurement
	// holds the limit.)
	hog, err := acme.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{DiskMB: 32}, LimitsBestEffort: true})
	if err != nil {
		t.Fatal(err)
	}
	writer := []string{"sh", "-c", "i=0; while [ $i -lt 100 ]; do dd if=/dev/urandom of=/workspace/f$i bs=1M count=4 2>/dev/null; i=$((i+1)); sleep 0.2; done"}
	if _, err := acme.StartProcess(ctx, hog.ID, api.ProcessRequest{Cmd: writer}); err != nil {
		t.Fatal(err)
	}
	if within("the sandbox past its disk limit stopped", 30*time.Second, func() bool { return stoppedFor(hog.ID, "disk_limit") }) {
		got, err := acme.GetSandbox(ctx, hog.ID)
		if err != nil || got.State != api.StateStopped || got.Disk == nil || got.Disk.Enforcement != api.DiskEnforcedByStop {
			t.Fatalf("the stopped sandbox: %+v, %v", got, err)
		}
		t.Logf("its disk once stopped: %+v", *got.Disk)
		if got.Disk.UsedBytes > 160<<20 {
			t.Errorf("it wrote %d MiB before it was stopped; want it stopped within a few measurements of 32 MiB", got.Disk.UsedBytes>>20)
		}
	}

	// Its tenant fills the rest of its disk with a sandbox of no limit.
	filler, err := acme.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The policy may stop it as it passes its tenant's disk, the command
	// with it.
	res, err := acme.Exec(ctx, filler.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "dd if=/dev/urandom of=/workspace/big bs=1M count=80 2>&1; sync"}})
	if (err != nil && client.Code(err) != "sandbox_not_running") || (err == nil && res.ExitCode != 0) {
		t.Fatalf("filling: %+v, %v", res, err)
	}
	refused := func() bool {
		_, err := acme.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err == nil {
			return false
		}
		if client.StatusCode(err) != http.StatusTooManyRequests || client.Code(err) != "quota_exceeded" || !strings.Contains(err.Error(), "disk_mb") {
			t.Fatalf("a create past the tenant's disk: %v; want 429 quota_exceeded naming disk_mb", err)
		}
		t.Logf("refused: %v", err)
		return true
	}
	within("the tenant's create past its disk_mb refused", 30*time.Second, refused)
	if _, err := acme.CreateSnapshot(ctx, filler.ID, api.CreateSnapshotRequest{}); client.Code(err) != "quota_exceeded" {
		t.Errorf("a snapshot past the tenant's disk: %v; want quota_exceeded", err)
	}
	within("the sandbox that grew past its tenant's disk stopped", 30*time.Second, func() bool { return stoppedFor(filler.ID, "disk_quota") })
	if q, err := acme.TenantQuotas(ctx, tn.ID); err != nil || q.Usage.DiskMB <= disk {
		t.Errorf("the tenant's disk usage: %+v, %v; want past %d MiB", q, err, disk)
	}

	// Another tenant is not refused anything.
	other, err := admin.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatalf("another tenant's create: %v", err)
	}
	if err := admin.DeleteSandbox(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
}
