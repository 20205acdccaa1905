package namespace_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
	"github.com/hutchdev/hutch/internal/runtime/host/hostids"
)

// TestDestroyKillsEscapedUID: a process running as one of a destroyed
// sandbox's host uids outside its cgroups (a setuid file of the sandbox's
// that got out, say) is killed before the uid range can go to another
// sandbox, even though destroy itself no longer walks /proc: the range
// stays registered until the reaper's walk has killed it.
func TestDestroyKillsEscapedUID(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root: uid ranges are root's")
	}
	d := openRootDriver(t)
	ctx := context.Background()
	h, err := d.Create(ctx, driver.Spec{SandboxID: ids.New(), Template: "host", Limits: api.Limits{MemoryMB: 64, Pids: 64},
		Token: ids.Token(32), MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		IDBase uint32 `json:"id_base"`
	}
	if err := json.Unmarshal(h.State, &st); err != nil || st.IDBase == 0 {
		t.Fatalf("the handle's id base: %v (%s)", err, h.State)
	}
	// The escapee: on the host, outside the sandbox's cgroups, running as
	// the sandbox's uid 1000.
	esc := exec.Command("sleep", "300")
	esc.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.IDBase + 1000, Gid: st.IDBase + 1000}}
	if err := esc.Start(); err != nil {
		t.Fatal(err)
	}
	defer esc.Process.Kill()
	exited := make(chan struct{})
	go func() { esc.Wait(); close(exited) }()

	pool, err := hostids.New(hostids.Registry, 2_200_000_000, 1<<16, 30_000)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for dead := false; ; {
		select {
		case <-exited:
			dead = true
		case <-deadline:
			t.Fatalf("a process running as uid %d of a destroyed sandbox still runs 30 s on", st.IDBase+1000)
		case <-time.After(time.Millisecond):
		}
		_, held := pool.Owner(st.IDBase)
		if !held && !dead {
			t.Fatalf("the range at %d was released while a process ran as one of its uids (pid %d, alive %v)", st.IDBase, esc.Process.Pid, hostproc.Alive(esc.Process.Pid, 0))
		}
		if dead && !held {
			return // killed, then released
		}
	}
}

// TestSweepReleasesRetired: a sweep (the one at start-up above all, after
// a crash left ranges retired and not yet walked) returns with no range
// still registered to a sandbox that is gone.
func TestSweepReleasesRetired(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root: uid ranges are root's")
	}
	d := openRootDriver(t)
	ctx := context.Background()
	h, err := d.Create(ctx, driver.Spec{SandboxID: ids.New(), Template: "host", Limits: api.Limits{MemoryMB: 64, Pids: 64},
		Token: ids.Token(32), MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		IDBase uint32 `json:"id_base"`
	}
	if err := json.Unmarshal(h.State, &st); err != nil || st.IDBase == 0 {
		t.Fatalf("the handle's id base: %v (%s)", err, h.State)
	}
	if err := d.Destroy(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Sweep(ctx, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	pool, err := hostids.New(hostids.Registry, 2_200_000_000, 1<<16, 30_000)
	if err != nil {
		t.Fatal(err)
	}
	if owner, held := pool.Owner(st.IDBase); held {
		t.Errorf("after the sweep the range at %d is still registered to %s, which is gone", st.IDBase, owner)
	}
}
