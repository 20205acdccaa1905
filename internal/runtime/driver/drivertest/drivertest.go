// Package drivertest is the conformance suite every driver passes: life
// cycle, exec, files, limits, isolation, and cleanup that leaves no process,
// mount, cgroup or directory behind. A driver's own test calls Run with a
// constructor and a probe for its leftovers.
package drivertest

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Suite describes the driver under test.
type Suite struct {
	// New returns a driver. Called more than once, it must return drivers
	// over the same host state, as after a control-plane restart.
	New func(t *testing.T) driver.Driver
	// Leftovers lists what of sandbox id is still on the host beyond
	// processes (which the suite finds itself): directories, mounts,
	// cgroups, uids. Empty means clean.
	Leftovers func(id string) []string
	// Escape runs the escape suite (escape.go): for drivers that claim
	// to isolate a sandbox from the host and from other sandboxes.
	Escape bool
	// Probe is a built probe command (probe/) for the escape suite; empty
	// builds one.
	Probe string
	// RootInside says the driver runs every command as root inside the
	// sandbox (the namespace driver rootless), unprivileged on the host.
	RootInside bool
	// HostPaths are host paths no sandbox may read or write, such as the
	// driver's directory; the escape suite adds /root and its own working
	// directory.
	HostPaths []string
	// MemoryRlimit says one command's memory is bounded by an rlimit
	// below the sandbox's limit (the kubernetes driver's, whose agent
	// shares the Pod's memory): a memory hog then fails its allocation
	// rather than being killed by the kernel.
	MemoryRlimit bool
	// SkipEscape names the escape suite's tests (HostFiles, Network, …)
	// that do not apply to the driver where it runs, each with the reason
	// its skip gives: what the driver reports degraded there.
	SkipEscape map[string]string
	// Skip names the tests a driver cannot pass by its nature, each with
	// the reason its skip gives: the fake driver's Isolation. What a
	// driver's Capabilities say it lacks is skipped without it.
	Skip map[string]string
}

// tests are the suite's tests, by name, in the order Run runs them.
var tests = []struct {
	name string
	run  func(*testing.T, Suite)
}{
	{"Lifecycle", testLifecycle},
	{"Exec", testExec},
	{"Files", testFiles},
	{"Limits", testLimits},
	{"Isolation", testIsolation},
	{"FailedCreateLeavesNothing", testFailedCreate},
	{"Recover", testRecover},
	{"Sweep", testSweep},
	{"CancelledDestroyStillCleans", testCancelledDestroy},
	{"Image", testImage},
	{"Snapshot", testSnapshot},
	{"SnapshotLinks", testSnapshotLinks},
	{"Volumes", testVolumes},
	{"Metrics", testMetrics},
}

// Run runs the whole suite.
func Run(t *testing.T, s Suite) {
	unknown := maps.Clone(s.Skip)
	for _, tc := range tests {
		why, skip := s.Skip[tc.name]
		delete(unknown, tc.name)
		t.Run(tc.name, func(t *testing.T) {
			if skip {
				t.Skip(why)
			}
			tc.run(t, s)
		})
	}
	for name := range unknown {
		t.Errorf("Skip names %s, which is no test of the suite", name)
	}
	if s.Escape {
		t.Run("Escape", func(t *testing.T) { testEscape(t, s) })
	}
}

// sandbox is one created sandbox and its agent.
type sandbox struct {
	id     string
	handle driver.Handle
	agent  *agentclient.Client
}

func spec(limits api.Limits) driver.Spec {
	return driver.Spec{
		SandboxID:    ids.New(),
		TenantID:     "test-tenant",
		Template:     "host",
		Limits:       limits,
		Token:        ids.Token(32),
		MaxFileBytes: 8 << 20,
	}
}

// create makes a sandbox that is destroyed when the test ends.
func create(t *testing.T, d driver.Driver, sp driver.Spec) *sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := d.Create(ctx, sp)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	sb := &sandbox{id: sp.SandboxID, handle: h, agent: newAgent(h)}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(sb.handle.Agent.Address)), "agent.log")); err == nil {
				t.Logf("agent log:\n%s", b)
			}
		}
		sb.agent.Close()
		if err := d.Destroy(context.Background(), sb.handle); err != nil {
			t.Errorf("Destroy in cleanup: %v", err)
		}
	})
	return sb
}

// reattach takes the handle a Start or Restore returned, with a client of
// its agent.
func (sb *sandbox) reattach(h driver.Handle) {
	sb.handle = h
	sb.agent.Close()
	sb.agent = newAgent(h)
}

// restart stops and starts the sandbox, keeping its files.
func restart(t *testing.T, d driver.Driver, sb *sandbox) {
	t.Helper()
	ctx := context.Background()
	if err := d.Stop(ctx, sb.handle); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	h, err := d.Start(ctx, sb.handle)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	sb.reattach(h)
}

// newAgent is a client of the agent of h.
func newAgent(h driver.Handle) *agentclient.Client {
	return agentclient.New(h.Agent.Network, h.Agent.Address, h.Token, agentclient.Speaking(h.Agent.Info))
}

// run executes cmd in the sandbox and returns the result.
func run(t *testing.T, sb *sandbox, cmd ...string) api.ExecResult {
	t.Helper()
	return runReq(t, sb, api.ExecRequest{Cmd: cmd, TimeoutMS: 60_000})
}

func runReq(t *testing.T, sb *sandbox, req api.ExecRequest) api.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := sb.agent.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Cmd, err)
	}
	defer st.Close()
	res, err := st.Collect()
	if err != nil {
		t.Fatalf("exec %q: stream: %v", req.Cmd, err)
	}
	return res
}

// sh runs a shell script and fails the test unless it exits 0.
func sh(t *testing.T, sb *sandbox, script string) string {
	t.Helper()
	res := run(t, sb, "/bin/sh", "-c", script)
	if res.ExitCode != 0 {
		t.Fatalf("sh -c %q: exit %d, stderr %q, error %q", script, res.ExitCode, res.Stderr, res.Error)
	}
	return res.Stdout
}

// commandsOf lists the sandbox's pids whose command line is cmdline
// (arguments NUL-terminated).
func commandsOf(id, cmdline string) []string {
	var out []string
	for _, pid := range processesOf(id) {
		if b, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && string(b) == cmdline {
			out = append(out, pid)
		}
	}
	return out
}

// processesOf lists host pids whose environment names the sandbox.
func processesOf(id string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	marker := []byte("HUTCH_SANDBOX_ID=" + id)
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains(string(b), string(marker)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// assertClean fails unless nothing of sandbox id is left on the host.
func assertClean(t *testing.T, s Suite, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		procs := processesOf(id)
		left := s.Leftovers(id)
		if len(procs) == 0 && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s left behind processes %v and %v", id, procs, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
