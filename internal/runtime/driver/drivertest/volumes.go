package drivertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// testVolumes mounts a host directory into sandboxes (drivers whose
// capabilities say Volumes): what one writes another reads, a read-only
// mount refuses writes, the files outlive the sandboxes, and a mount point
// the root mounts itself is refused.
func testVolumes(t *testing.T, s Suite) {
	d := s.New(t)
	if !d.Capabilities().Volumes {
		t.Skip("the driver mounts no volumes here")
	}
	// As the volume service makes one: the sandbox's own ids on disk (the
	// test's, 0 as root), open to every user of the sandbox.
	vol := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(vol, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	rw := spec(api.Limits{})
	rw.Volumes = []driver.Volume{{Dir: vol, Path: "/data"}}
	a := create(t, d, rw)
	sh(t, a, "echo shared > /data/x && mkdir -p /data/sub && echo deep > /data/sub/y")
	ro := spec(api.Limits{})
	ro.Volumes = []driver.Volume{{Dir: vol, Path: "/mnt/deep/ro", ReadOnly: true}}
	b := create(t, d, ro)
	if got := sh(t, b, "cat /mnt/deep/ro/x /mnt/deep/ro/sub/y"); got != "shared\ndeep\n" {
		t.Errorf("the other sandbox reads %q; want what the first wrote", got)
	}
	if res := run(t, b, "/bin/sh", "-c", "echo no > /mnt/deep/ro/z"); res.ExitCode == 0 || !strings.Contains(res.Stderr, "Read-only") {
		t.Errorf("a write to a read-only volume: exit %d, %q", res.ExitCode, res.Stderr)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "sub", "y")); err != nil || string(b) != "deep\n" {
		t.Errorf("the volume's directory holds %q, %v", b, err)
	}
	// Through a stop and start, and past the sandboxes.
	if d.Capabilities().StartStop {
		restart(t, d, a)
		if got := sh(t, a, "cat /data/x"); got != "shared\n" {
			t.Errorf("after Stop and Start: %q", got)
		}
	}
	if err := d.Destroy(context.Background(), a.handle); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(vol, "x")); err != nil {
		t.Errorf("the volume's files went with a sandbox: %v", err)
	}
	for _, p := range []string{"/proc/x", "/tmp", "/.hutch"} {
		bad := spec(api.Limits{})
		bad.Volumes = []driver.Volume{{Dir: vol, Path: p}}
		if _, err := d.Create(context.Background(), bad); !errdefs.HasCode(err, "invalid_volume_path") {
			t.Errorf("a volume at %s: %v; want invalid_volume_path", p, err)
		}
		assertClean(t, s, bad.SandboxID)
	}
}
