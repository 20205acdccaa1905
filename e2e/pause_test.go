package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// relay counts up once every 50 ms through a TCP connection inside the
// sandbox: a gap or a new start in its output is a process or a
// connection that did not live through a pause. The counter connects
// once the listener listens: a connection refused ends it for good, and a
// fixed head start for the listener was lost under load.
const relay = `sleep 100000 | busybox nc -l -p 9000 & until busybox netstat -ltn | grep -q ':9000 '; do sleep 0.05; done; ` +
	`i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done | busybox nc 127.0.0.1 9000`

// outputOf is what process pid has written to its stdout so far.
func outputOf(t *testing.T, c *client.Client, id string, pid int) string {
	t.Helper()
	out, err := processOutput(context.Background(), c, id, pid)
	if err != nil {
		t.Fatalf("output of process %d: %v", pid, err)
	}
	return out
}

// counted checks out is 1, 2, 3… without a gap and returns its last
// number.
func counted(t *testing.T, out string) int {
	t.Helper()
	lines := strings.Fields(out)
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d of the relay is %q: the count broke (%q)", i+1, l, out)
		}
	}
	return len(lines)
}

// TestPauseResume: a paused sandbox's processes and their TCP connection
// go on where they stopped once it is resumed, by a call, a request that
// reaches it (auto-resume) or the CLI, and after a restart of hutch; its
// files survive pause, resume, stop and start; its clock is held.
func TestPauseResume(t *testing.T) {
	dataDir := testutil.DataDir(t)
	s := startServer(t, dataDir, "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: 600})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo kept > kept.txt"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write a file: %+v, %v", res, err)
	}
	p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", relay}})
	if err != nil {
		t.Fatal(err)
	}
	grown := func(past int) func() bool {
		return func() bool { return counted(t, outputOf(t, c, sb.ID, p.PID)) >= past+5 }
	}
	waitUntil(t, "the relay counts", grown(0))
	// A process that keeps a core busy: its CPU time, read from the
	// sandbox's cgroup, rises while it runs and stands still while the
	// sandbox is paused.
	if _, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do :; done"}}); err != nil {
		t.Fatal(err)
	}
	cpu := func() uint64 {
		t.Helper()
		m, err := c.SandboxMetrics(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return m.CPU.UsageNS
	}
	busy := cpu()
	waitUntil(t, "the busy process uses CPU", func() bool { return cpu() > busy })

	paused, err := c.PauseSandbox(ctx, sb.ID)
	if err != nil || paused.State != api.StatePaused || paused.PausedAt == nil || paused.ExpiresAt != nil {
		t.Fatalf("pause: %+v, %v", paused, err)
	}
	still := cpu()
	time.Sleep(500 * time.Millisecond) // frozen meanwhile
	if now := cpu(); now != still {
		t.Fatalf("a paused sandbox used %d ns of CPU in half a second", now-still)
	}
	got, err := c.GetSandbox(ctx, sb.ID)
	if err != nil || got.State != api.StatePaused {
		t.Fatalf("a GET resumed the sandbox: %+v, %v", got, err)
	}
	resumed, err := c.ResumeSandbox(ctx, sb.ID)
	if err != nil || resumed.State != api.StateRunning || resumed.ExpiresAt == nil {
		t.Fatalf("resume: %+v, %v", resumed, err)
	}
	before := counted(t, outputOf(t, c, sb.ID, p.PID))
	waitUntil(t, "the relay counts on after the resume", grown(before))

	// A call resumes a paused sandbox.
	if _, err := c.PauseSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "kept.txt"}})
	if err != nil || res.Stdout != "kept\n" {
		t.Fatalf("exec on a paused sandbox: %+v, %v", res, err)
	}
	evs, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventSandboxResumed}})
	if err != nil || len(evs.Events) != 2 || evs.Events[1].Data["reason"] != "auto" || evs.Events[1].Data["op"] != "exec" {
		t.Fatalf("resume events: %+v, %v", evs, err)
	}

	// Paused across a restart of hutch: still paused, and it goes on.
	if _, stderr, code := s.cli("", "sandbox", "pause", sb.ID); code != 0 {
		t.Fatalf("hutch sandbox pause: %d %s", code, stderr)
	}
	s.stop(false)
	s = startServer(t, dataDir, "--driver", "namespace")
	c = s.client()
	if got, err := c.GetSandbox(ctx, sb.ID); err != nil || got.State != api.StatePaused {
		t.Fatalf("after a restart: %+v, %v", got, err)
	}
	if _, stderr, code := s.cli("", "sandbox", "resume", sb.ID); code != 0 {
		t.Fatalf("hutch sandbox resume: %d %s", code, stderr)
	}
	before = counted(t, outputOf(t, c, sb.ID, p.PID))
	waitUntil(t, "the relay counts on after a restart", grown(before))
	if proc, err := c.GetProcess(ctx, sb.ID, p.PID); err != nil || !proc.Running {
		t.Fatalf("the relay: %+v, %v", proc, err)
	}

	// Files outlive a stop and a start from paused.
	if _, err := c.PauseSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StopSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"cat", "kept.txt"}}); err != nil || res.Stdout != "kept\n" {
		t.Fatalf("after pause, stop and start: %+v, %v", res, err)
	}
}
