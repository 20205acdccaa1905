package namespace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/drivertest"
	"github.com/hutchdev/hutch/internal/runtime/driver/namespace"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/testutil"
)

// envRootless, in a copy of this test binary that TestRootless runs as an
// unprivileged user, names the directory holding a built hutch-agent and
// probe.
const envRootless = "HUTCH_TEST_ROOTLESS_BIN"

var binDir string

func TestMain(m *testing.M) {
	if dir := os.Getenv(envRootless); dir != "" {
		binDir = dir
		os.Exit(m.Run())
	}
	if os.Geteuid() != 0 {
		// TestConformance says why it skips.
		os.Exit(m.Run())
	}
	dir, err := testutil.Build("cmd/hutch-agent", "internal/runtime/driver/drivertest/probe")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestConformance runs the driver conformance suite and the escape suite:
// as root, or rootless when TestRootless runs it.
func TestConformance(t *testing.T) {
	rootless := os.Getenv(envRootless) != ""
	if os.Geteuid() != 0 && !rootless {
		t.Skip("the namespace driver needs root here (TestRootless covers the rootless mode from a root run); CI runs this as root")
	}
	base, err := os.MkdirTemp("", "hutch-namespace-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "sandboxes")
	parent := "hutch-test-" + ids.New()[20:]
	agent := filepath.Join(binDir, "hutch-agent")
	drivertest.Run(t, drivertest.Suite{
		New: func(t *testing.T) driver.Driver {
			d, err := namespace.New(namespace.Config{Dir: dir, AgentPath: agent, WarmPool: 2, CgroupParent: parent})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			if err := d.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			return d
		},
		Leftovers: func(id string) []string {
			var left []string
			if _, err := os.Lstat(filepath.Join(dir, id)); err == nil {
				left = append(left, filepath.Join(dir, id))
			}
			cgs, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent + "/" + id)
			return append(left, cgs...)
		},
		Escape:     true,
		RootInside: rootless,
		Probe:      filepath.Join(binDir, "probe"),
		HostPaths:  []string{base, binDir},
	})
	// The test's cgroup parent goes with it.
	parents, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
	for _, p := range parents {
		os.Remove(p)
	}
}

// TestRootless runs TestConformance again as an unprivileged user (nobody),
// where the driver maps a sandbox's root to that user alone.
func TestRootless(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("runs from a root run, which starts the unprivileged one")
	}
	dir, err := os.MkdirTemp("", "hutch-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, name := range []string{"hutch-agent", "probe"} {
		b, err := os.ReadFile(filepath.Join(binDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.RerunAsNobody(t, dir, []string{"-test.run=^TestConformance$", "-test.count=1", "-test.v"}, envRootless+"="+dir)
}

// TestSweepSparesOtherServers: two servers on one host share the cgroup
// parent; a sweep by one, which knows none of the other's sandboxes,
// leaves them running with their cgroups.
func TestSweepSparesOtherServers(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root, for the cgroups")
	}
	base := t.TempDir()
	parent := "hutch-test-" + ids.New()[20:]
	t.Cleanup(func() {
		parents, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
		for _, p := range parents {
			os.Remove(p)
		}
	})
	newDriver := func(name string) *namespace.Driver {
		d, err := namespace.New(namespace.Config{Dir: filepath.Join(base, name), AgentPath: filepath.Join(binDir, "hutch-agent"), CgroupParent: parent})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := d.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := newDriver("a"), newDriver("b")
	ctx := context.Background()
	id := ids.New()
	h, err := a.Create(ctx, driver.Spec{SandboxID: id, Template: "host", Limits: api.Limits{MemoryMB: 64, Pids: 64}, Token: ids.Token(32), MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Destroy(context.Background(), h) })
	if _, err := b.Sweep(ctx, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if st, err := a.Status(ctx, h); err != nil || st.State != driver.Running {
		t.Fatalf("after the other server's sweep: %+v, %v", st, err)
	}
	if cgs, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent + "/" + id); len(cgs) == 0 {
		t.Fatal("the other server's sweep removed the sandbox's cgroups")
	}
}

// TestParentCapped: Open caps the cgroup parent it makes at the host's
// memory and tasks less the control plane's reserve, so sandboxes together
// cannot starve it; a parent someone else made is left as it was.
func TestParentCapped(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root, for the cgroups")
	}
	facts, err := hostinfo.Read()
	if err != nil {
		t.Fatal(err)
	}
	const reserveMB, reservePids = 2048, 8192
	mem := strconv.FormatInt(int64(hostinfo.Budget(facts.MemoryMB, reserveMB))<<20, 10)
	pids := strconv.Itoa(hostinfo.Budget(facts.Tasks(), reservePids))
	// The parent's limit files on a v1 host (each controller's hierarchy)
	// and a v2 one.
	files := func(parent string) map[string][]string {
		return map[string][]string{
			"memory": {"/sys/fs/cgroup/memory/" + parent + "/memory.limit_in_bytes", "/sys/fs/cgroup/memory/" + parent + "/memory.memsw.limit_in_bytes", "/sys/fs/cgroup/" + parent + "/memory.max"},
			"pids":   {"/sys/fs/cgroup/pids/" + parent + "/pids.max", "/sys/fs/cgroup/" + parent + "/pids.max"},
		}
	}
	open := func(t *testing.T, parent string) {
		t.Cleanup(func() {
			parents, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
			parents = append(parents, "/sys/fs/cgroup/"+parent)
			for _, p := range parents {
				os.Remove(p)
			}
		})
		d, err := namespace.New(namespace.Config{Dir: filepath.Join(t.TempDir(), "sandboxes"), AgentPath: filepath.Join(binDir, "hutch-agent"),
			CgroupParent: parent, ReserveMemoryMB: reserveMB, ReservePids: reservePids})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := d.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, path string) (string, bool) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		return strings.TrimSpace(string(b)), true
	}

	t.Run("made", func(t *testing.T) {
		parent := "hutch-test-" + ids.New()[20:]
		open(t, parent)
		found := map[string]bool{}
		for controller, paths := range files(parent) {
			want := map[string]string{"memory": mem, "pids": pids}[controller]
			for _, p := range paths {
				if got, ok := read(t, p); ok {
					found[controller] = true
					if got != want {
						t.Errorf("%s = %s, want %s (host %d MiB, %d tasks, less the reserve)", p, got, want, facts.MemoryMB, facts.Tasks())
					}
				}
			}
		}
		if !found["memory"] || !found["pids"] {
			t.Fatalf("the parent's limits were not found (memory %v, pids %v)", found["memory"], found["pids"])
		}
	})

	t.Run("foreign", func(t *testing.T) {
		parent := "hutch-test-" + ids.New()[20:]
		for _, dir := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"} {
			if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
				if err := os.Mkdir(filepath.Join(dir, parent), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		open(t, parent)
		for _, paths := range files(parent) {
			for _, p := range paths {
				if got, ok := read(t, p); ok && got != "max" && got != "9223372036854771712" {
					t.Errorf("%s of a parent hutch did not make = %s; want it untouched (no limit)", p, got)
				}
			}
		}
	})
}

// TestPauseStarved: a sandbox whose processes get next to no CPU (the
// smallest CPU limit, spent at once by busy loops) still pauses: a
// process stops only once it is scheduled, and the pause waits for the
// kernel to say they all have. Given no time for it,
// the pause fails, says why, and leaves the sandbox running.
func TestPauseStarved(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root, for the cgroup freezer")
	}
	base := t.TempDir()
	parent := "hutch-test-" + ids.New()[20:]
	t.Cleanup(func() {
		parents, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
		parents = append(parents, "/sys/fs/cgroup/"+parent)
		for _, p := range parents {
			os.Remove(p)
		}
	})
	// Two drivers over the same sandboxes, as a server and the same
	// server restarted with another --freeze-timeout.
	open := func(freezeTimeout time.Duration) *namespace.Driver {
		d, err := namespace.New(namespace.Config{Dir: filepath.Join(base, "sandboxes"), AgentPath: filepath.Join(binDir, "hutch-agent"),
			CgroupParent: parent, FreezeTimeout: freezeTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		if err := d.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, hasty := open(0), open(time.Nanosecond)
	if !d.Capabilities().Pause {
		t.Skip("no cgroup freezer on this host")
	}
	ctx := context.Background()
	id := ids.New()
	h, err := d.Create(ctx, driver.Spec{SandboxID: id, Template: "host", Limits: api.Limits{MemoryMB: 64, Pids: 64, CPU: 0.01},
		Token: ids.Token(32), MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(context.Background(), h) })
	// The same share, 1%, over a period of a second rather than 100 ms:
	// the loops spend it at once and are held off the CPU for most of a
	// second at a time.
	for _, f := range [][2]string{
		{filepath.Join("/sys/fs/cgroup/cpu", parent, id, "box/cpu.cfs_period_us"), "1000000"},
		{filepath.Join("/sys/fs/cgroup/cpu", parent, id, "box/cpu.cfs_quota_us"), "10000"},
		{filepath.Join("/sys/fs/cgroup", parent, id, "box/cpu.max"), "10000 1000000"},
	} {
		if err := os.WriteFile(f[0], []byte(f[1]), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	agent := agentclient.New(h.Agent.Network, h.Agent.Address, h.Token, agentclient.Speaking(h.Agent.Info))
	t.Cleanup(agent.Close)
	for range 3 {
		if _, err := agent.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do :; done"}}); err != nil {
			t.Fatal(err)
		}
	}
	frozen := func() bool {
		if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", parent, id, "freezer.state")); err == nil {
			return strings.TrimSpace(string(b)) == "FROZEN"
		}
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", parent, id, "cgroup.events"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b), "frozen 1")
	}

	err = hasty.Pause(ctx, h)
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "did not all stop within 1ns") {
		t.Fatalf("a pause with no time to freeze = %v, want pause_failed saying why", err)
	}
	if frozen() {
		t.Fatal("a failed pause left the sandbox frozen")
	}
	began := time.Now()
	if err := d.Pause(ctx, h); err != nil {
		t.Fatalf("Pause of a starved sandbox after %v: %v", time.Since(began), err)
	}
	t.Logf("paused in %v", time.Since(began))
	if !frozen() {
		t.Fatal("a paused sandbox is not frozen")
	}
	if err := d.Resume(ctx, h); err != nil {
		t.Fatal(err)
	}
}
