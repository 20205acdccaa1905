package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// hungAfter is the server's --agent-hung-after in TestLostAgent.
const hungAfter = 15 * time.Second

// TestLostAgent: a call to a sandbox whose agent hangs (SIGSTOP) or dies
// (SIGKILL) ends with a clear 503 instead of hanging, and the sandbox is
// marked failed with the reason (a hung one once it has not answered for
// --agent-hung-after); destroying it still works. An agent that stops
// answering for a while and then answers again (a starved one on a busy
// host) keeps its sandbox running. The cases run side by side: a call to
// a stopped agent takes its minute to fail.
func TestLostAgent(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace", "--agent-hung-after", hungAfter.String())
	c := s.client()
	ctx := context.Background()
	for _, tc := range []struct {
		sig    syscall.Signal
		reason string
	}{
		{syscall.SIGSTOP, "did not answer for " + hungAfter.String()},
		// Gone, or (while the kernel reaps it) refusing connections.
		{syscall.SIGKILL, "its agent "},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
			if err != nil {
				t.Fatal(err)
			}
			pid := agentPid(t, sb.ID)
			if err := syscall.Kill(pid, tc.sig); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard
			defer cancel()
			_, err = c.Exec(cctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}})
			if cctx.Err() != nil {
				t.Fatal("the call hung")
			}
			if code := client.Code(err); client.StatusCode(err) != 503 || (code != "agent_unreachable" && code != "agent_stream_broken") {
				t.Fatalf("exec with the agent %s: %v; want 503 agent_unreachable", tc.sig, err)
			}
			waitUntil(t, "the sandbox marked failed", func() bool {
				got, err := c.GetSandbox(ctx, sb.ID)
				return err == nil && got.State == api.StateFailed && strings.Contains(got.Error, tc.reason)
			})
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("starved", func(t *testing.T) {
		t.Parallel()
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
		pid := agentPid(t, sb.ID)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard
		defer cancel()
		if _, err := c.Exec(cctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); client.StatusCode(err) != 503 {
			t.Fatalf("exec with the agent stopped: %v; want a 503", err)
		}
		// Longer than one health check's bound: a check fails now.
		time.Sleep(8 * time.Second)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(hungAfter)
		got, err := c.GetSandbox(ctx, sb.ID)
		if err != nil || got.State != api.StateRunning {
			t.Fatalf("after the agent answered again: %+v, %v; want it running", got, err)
		}
		if res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
			t.Fatalf("exec after the agent answered again: %+v, %v", res, err)
		}
	})

}

// TestOverloadedRestart: a server that restarts while a sandbox's agent
// gets almost no CPU (starve: as on a host overloaded by thousands of
// agents woken at once) finds the agent silent for longer than
// --agent-hung-after, and keeps the sandbox running: its agent waits for a
// CPU, it is not hung, and failing it would stop its user's processes.
func TestOverloadedRestart(t *testing.T) {
	dataDir := testutil.DataDir(t)
	args := []string{"--driver", "namespace", "--agent-hung-after", hungAfter.String()}
	s := startServer(t, dataDir, args...)
	ctx := context.Background()
	sb, err := s.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.client().Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	bgPid := strings.TrimSpace(res.Stdout)
	pid := agentPid(t, sb.ID)
	s.stop(false)

	release := starve(t, pid)
	t0 := time.Now()
	s2 := startServer(t, dataDir, args...)
	t.Logf("server serves %s after its start", time.Since(t0))
	c := s2.client()
	defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
	// The health check after recovery fails, then every recheck, for
	// longer than --agent-hung-after.
	time.Sleep(hungAfter + 15*time.Second)
	release()
	t.Logf("released %s after the start", time.Since(t0))
	got, err := c.GetSandbox(ctx, sb.ID)
	if err != nil || got.State != api.StateRunning {
		t.Fatalf("after its agent was starved for %s across a restart: %+v, %v; want it running", hungAfter+15*time.Second, got, err)
	}
	waitUntil(t, "the sandbox's process still there after the starvation", func() bool {
		res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "kill -0 " + bgPid + " && echo alive"}})
		return err == nil && res.Stdout == "alive\n"
	})
	t.Logf("answered %s after the start", time.Since(t0))
}
