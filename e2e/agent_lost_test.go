package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestLostAgent: a call to a sandbox whose agent hangs (SIGSTOP) or dies
// (SIGKILL) ends with a clear 503 instead of hanging, and the sandbox is
// marked failed with the reason; destroying it still works.
func TestLostAgent(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx := context.Background()
	for _, tc := range []struct {
		sig    syscall.Signal
		reason string
	}{
		{syscall.SIGSTOP, "did not answer"},
		// Gone, or (while the kernel reaps it) refusing connections.
		{syscall.SIGKILL, "its agent "},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
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
}
