package sandbox

import (
	"context"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
)

// A sandbox created while the sweep runs, after it listed the records and
// before its driver read its directories, is no orphan: the sweep leaves
// it running. It tore such sandboxes down (directory, cgroups, agent)
// under a steady stream of creates, and they failed their next call as
// unreachable with their records still running.
func TestSweepSparesSandboxCreatedMeanwhile(t *testing.T) {
	f := newLiveFixture(t, nil)
	var made api.Sandbox
	f.drv.Hook(fake.OpSweep, func(context.Context, string) error {
		made = f.create(t)
		return nil
	})
	if err := f.svc.Sweep(tenancy.System(context.Background())); err != nil {
		t.Fatal(err)
	}
	if made.ID == "" {
		t.Fatal("the sweep hook never ran")
	}
	if got := f.state(t, made.ID); got != api.StateRunning {
		t.Fatalf("sandbox created during the sweep is %s; want running", got)
	}
	if _, err := f.svc.Exec(f.ctx, made.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Fatalf("exec in the sandbox created during the sweep: %v; want it untouched by the sweep", err)
	}
}
