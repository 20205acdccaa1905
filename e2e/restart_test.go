package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestRestartRecovers: sandboxes and their processes outlive a graceful
// control-plane restart, the new server re-attaches to them, and it sweeps
// sandbox directories the store does not know.
func TestRestartRecovers(t *testing.T) {
	dataDir := testutil.DataDir(t)
	s := startServer(t, dataDir)
	ctx := context.Background()
	sb, err := s.client().CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.client().Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo kept > kept.txt; sleep 300 >/dev/null 2>&1 & echo $!"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	bgPid := strings.TrimSpace(res.Stdout)
	info, err := s.client().Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.stop(false)

	orphan := filepath.Join(dataDir, "sandboxes", info.Driver, ids.New())
	if err := os.MkdirAll(filepath.Join(orphan, "root"), 0o700); err != nil {
		t.Fatal(err)
	}

	s2 := startServer(t, dataDir)
	got, err := s2.client().GetSandbox(ctx, sb.ID)
	if err != nil || got.State != api.StateRunning {
		t.Fatalf("after restart = %+v, %v", got, err)
	}
	res, err = s2.client().Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "cat kept.txt; kill -0 " + bgPid + " && echo alive"}})
	if err != nil || res.Stdout != "kept\nalive\n" {
		t.Fatalf("after restart exec = %+v, %v", res, err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphaned sandbox directory survived the start-up sweep: %v", err)
	}
}
