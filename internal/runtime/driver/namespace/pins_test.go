package namespace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/namespace"
	"github.com/hutchdev/hutch/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestHoldsNoHostMount: a running sandbox keeps no filesystem of the host
// alive. Its mount namespace starts as a copy of the host's, whose old
// root it detaches after the pivot; anything it still held in that old
// tree (a socket bound there, a directory opened there) would keep every
// host mount of its creation alive, so a disk the operator unmounts stays
// busy, its loop device attached, for as long as the sandbox runs.
func TestHoldsNoHostMount(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root, to mount a loop filesystem")
	}
	d := openRootDriver(t)
	ctx := context.Background()
	fs := testutil.NewLoopFS(t, testutil.LoopFSConfig{Type: "ext4", Size: 64 << 20})
	h, err := d.Create(ctx, driver.Spec{SandboxID: ids.New(), Template: "host", Limits: api.Limits{MemoryMB: 64, Pids: 64, CPU: 0.5},
		Token: ids.Token(32), MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Destroy(context.Background(), h)
	if err := unix.Unmount(fs.Dir, 0); err != nil {
		t.Fatal(err)
	}
	// Other packages' tests may start sandboxes meanwhile, each with a
	// copy of the host's mounts until it pivots (a warm one until it is
	// claimed); those copies show in their mount tables, and free the
	// device when they end. What no table shows is this sandbox's hold.
	if err := fs.WaitFreed(5*time.Second, 2*time.Minute); err != nil {
		t.Fatalf("with sandboxes running, a filesystem the host unmounted stays alive: %v", err)
	}
}

// openRootDriver is a namespace driver in a temporary directory under a
// cgroup parent of its own, opened, closed and its parent removed when
// the test ends. The caller has checked it runs as root.
func openRootDriver(t *testing.T) *namespace.Driver {
	t.Helper()
	parent := "hutch-test-" + ids.New()[20:]
	t.Cleanup(func() {
		parents, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
		for _, p := range append(parents, "/sys/fs/cgroup/"+parent) {
			os.Remove(p)
		}
	})
	d, err := namespace.New(namespace.Config{Dir: filepath.Join(t.TempDir(), "sandboxes"), AgentPath: filepath.Join(binDir, "hutch-agent"), CgroupParent: parent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}
