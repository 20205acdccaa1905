package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestVolumesAndDiskLimits runs hutch on a btrfs filesystem with quotas
// on (a loop image the test makes): a sandbox's disk limit is EDQUOT
// inside and its usage shows outside; a volume's size is enforced the same
// way; a volume outlives the sandboxes that mount it, read-only mounts
// refuse writes, and a volume in use cannot be deleted. On the host's own
// filesystem (ext4 here, no quota) a sandbox's disk limit is held by
// measuring and stopping the sandbox (TestDiskWatch); a volume's size is
// refused unless best effort.
func TestVolumesAndDiskLimits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (loop devices, the namespace driver's id-mapped mounts); CI runs as root")
	}
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "btrfs", Size: 1 << 30})
	if out, err := exec.Command("btrfs", "quota", "enable", fs.Dir).CombinedOutput(); err != nil {
		t.Fatalf("btrfs quota enable: %v\n%s", err, out)
	}
	data := filepath.Join(fs.Dir, "data")
	s := startServer(t, data, "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil || !info.Features["disk_limit"] || info.Storage == nil || info.Storage.Backend != "btrfs" {
		t.Fatalf("info on btrfs with quotas: features %v storage %+v, %v", info.Features, info.Storage, err)
	}

	// A sandbox's disk limit.
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{DiskMB: 16}})
	if err != nil {
		t.Fatalf("create with disk_mb: %v", err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "dd if=/dev/zero of=/workspace/big bs=1M count=64 2>&1; rc=$?; sync; exit $rc"}})
	if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stdout, "Disk quota exceeded") {
		t.Fatalf("writing 64 MiB under a 16 MiB disk limit: %+v, %v; want EDQUOT", res, err)
	}
	got, err := c.GetSandbox(ctx, sb.ID)
	if err != nil || got.Disk == nil || got.Disk.LimitBytes != 16<<20 || got.Disk.Method != "qgroup" {
		t.Fatalf("the sandbox's disk: %+v, %v", got.Disk, err)
	}
	t.Logf("disk after the refused write: %+v", *got.Disk)
	// ... and an event outside, from the lifecycle loop.
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := c.Events(ctx, client.EventQuery{SandboxID: sb.ID, Types: []string{api.EventSandboxDiskFull}})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Events) == 1 {
			t.Logf("event: %s", evs.Events[0].Message)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event within 30 s (%d events)", api.EventSandboxDiskFull, len(evs.Events))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A volume, its size enforced, shared and outliving its sandboxes.
	vol, err := c.CreateVolume(ctx, api.CreateVolumeRequest{Name: "cache", SizeMB: 8})
	if err != nil || !vol.SizeEnforced {
		t.Fatalf("create volume: %+v, %v", vol, err)
	}
	a, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Volumes: []api.VolumeMount{{Name: "cache", Path: "/data"}}})
	if err != nil {
		t.Fatalf("create with a volume: %v", err)
	}
	res, err = c.Exec(ctx, a.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo kept > /data/kept && dd if=/dev/zero of=/data/big bs=1M count=32 2>&1"}})
	if err != nil || !strings.Contains(res.Stdout, "Disk quota exceeded") {
		t.Errorf("writing 32 MiB into an 8 MiB volume: %+v, %v; want EDQUOT", res, err)
	}
	b, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Volumes: []api.VolumeMount{{Name: "cache", Path: "/srv/cache", ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, b.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "cat /srv/cache/kept; touch /srv/cache/x"}}); err != nil || res.Stdout != "kept\n" || res.ExitCode == 0 {
		t.Errorf("read-only mount: %+v, %v; want the file read and the write refused", res, err)
	}
	if err := c.DeleteVolume(ctx, "cache"); client.Code(err) != "volume_in_use" {
		t.Errorf("delete a volume in use: %v; want volume_in_use", err)
	}
	for _, id := range []string{sb.ID, a.ID, b.ID} {
		if err := c.DeleteSandbox(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	again, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Volumes: []api.VolumeMount{{Name: "cache", Path: "/data"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, again.ID, api.ExecRequest{Cmd: []string{"cat", "/data/kept"}}); err != nil || res.Stdout != "kept\n" {
		t.Errorf("the volume after its sandboxes went: %+v, %v", res, err)
	}
	if _, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Volumes: []api.VolumeMount{{Name: "nope", Path: "/x"}}}); client.Code(err) != "invalid_volume" {
		t.Errorf("a volume that does not exist: %v", err)
	}
	if err := c.DeleteSandbox(ctx, again.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteVolume(ctx, "cache"); err != nil {
		t.Fatalf("delete the volume: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(data, "volumes")); len(left) != 0 {
		t.Errorf("the volume's files stay: %v", left)
	}
	s.stop(true)

	// The host's filesystem has no quota hutch uses: a sandbox's disk
	// limit is held by measuring and stopping it (TestDiskWatch), and
	// listed as enforced.
	plain := startServer(t, "", "--driver", "namespace")
	pc := plain.client()
	if info, err := pc.Info(ctx); err != nil || info.Features["disk_limit"] || !info.Features["disk_watch"] {
		t.Errorf("info on the host's filesystem: features %v, %v; want disk_watch, not disk_limit", info.Features, err)
	}
	watched, err := pc.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{DiskMB: 16}})
	if err != nil || len(watched.UnenforcedLimits) != 0 {
		t.Errorf("disk_mb without a quota: %+v, %v; want it taken and held", watched, err)
	} else if got, err := pc.GetSandbox(ctx, watched.ID); err != nil || got.Disk == nil || got.Disk.Enforcement != api.DiskEnforcedByStop {
		t.Errorf("its disk: %+v, %v; want a limit held by a stop", got.Disk, err)
	}
	if _, err := pc.CreateVolume(ctx, api.CreateVolumeRequest{Name: "v", SizeMB: 8}); client.Code(err) != "quota_unsupported" {
		t.Errorf("a volume whose size cannot be enforced: %v; want quota_unsupported", err)
	}
	if v, err := pc.CreateVolume(ctx, api.CreateVolumeRequest{Name: "v", SizeMB: 8, SizeBestEffort: true}); err != nil || v.SizeEnforced {
		t.Errorf("a best-effort volume: %+v, %v", v, err)
	}
}
