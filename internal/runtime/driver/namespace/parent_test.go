package namespace_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/nsinit"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"golang.org/x/sys/unix"
)

// TestAgentIsOurChild: the agent that the first stage starts is this
// process's child, not the host init's, and it is reaped here when it
// dies: no zombie is left behind, even where this process is PID 1 of a
// container with no init to reap orphans.
func TestAgentIsOurChild(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root")
	}
	pid := startAgent(t)
	if ppid := statField(t, pid, 4); ppid != strconv.Itoa(os.Getpid()) {
		t.Fatalf("the agent's parent is %s, not this process (%d)", ppid, os.Getpid())
	}
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		if errors.Is(err, os.ErrNotExist) {
			return // reaped
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed agent is still in /proc after 10s, state %s: not reaped", statField(t, pid, 3))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// statField is field n (1-based, as proc(5) numbers them) of
// /proc/<pid>/stat; "" once the process is gone.
func statField(t *testing.T, pid, n int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	f := strings.Fields(s[i+1:])
	if n < 3 || n-3 >= len(f) {
		return ""
	}
	return f[n-3]
}

// TestAgentEnvironment: the agent starts with the driver's environment
// (nsinit.Env) and nothing of this process's; the conformance suite checks
// that its commands see none of it.
func TestAgentEnvironment(t *testing.T) {
	if os.Geteuid() != 0 || os.Getenv(envRootless) != "" {
		t.Skip("needs root")
	}
	t.Setenv("HUTCH_TEST_LEAK", "1")
	b, err := os.ReadFile("/proc/" + strconv.Itoa(startAgent(t)) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if want := nsinit.Env(); !slices.Equal(got, want) {
		t.Fatalf("the agent's environment is %q, want %q", got, want)
	}
}

// startAgent creates a sandbox on a root driver of t's, destroyed when t
// ends, and returns its agent's pid.
func startAgent(t *testing.T) int {
	t.Helper()
	d := openRootDriver(t)
	h, err := d.Create(context.Background(), driver.Spec{SandboxID: ids.New(), Template: "host", Limits: api.Limits{MemoryMB: 64, Pids: 64, CPU: 0.5},
		Token: ids.Token(32), MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(context.Background(), h) })
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(h.State, &st); err != nil || st.Pid <= 0 {
		t.Fatalf("agent pid from the handle: %d, %v", st.Pid, err)
	}
	return st.Pid
}
