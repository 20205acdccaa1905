package sandbox

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
)

// TestLimitsTheDriverCannotEnforce: a limit the driver does not enforce is
// refused unless accepted as best effort, and then reported; defaults are
// applied only where enforced.
func TestLimitsTheDriverCannotEnforce(t *testing.T) {
	f := newFixture(t, nil)
	// A driver that enforces only a memory limit.
	caps := f.drv.Capabilities()
	caps.Limits = driver.LimitCaps{Memory: true}
	limited := fake.New(fake.Config{Dir: t.TempDir(), Capabilities: &caps})
	if err := limited.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Shutdown(limited) })
	cfg := f.config()
	cfg.Drivers = driver.Single(limited)
	cfg.DefaultLimits = api.Limits{MemoryMB: 256, CPU: 1, Pids: 64}
	cfg.Store, cfg.Events = f.st, events.New(f.st, events.Config{})
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Limits != (api.Limits{MemoryMB: 256}) || len(sb.UnenforcedLimits) != 0 {
		t.Fatalf("defaults = %+v (unenforced %v); want only the memory default", sb.Limits, sb.UnenforcedLimits)
	}
	_, err = svc.Create(f.ctx, api.CreateSandboxRequest{Limits: &api.Limits{CPU: 1, Pids: 32}})
	if !errors.Is(err, errdefs.ErrInvalid) || !errdefs.HasCode(err, "limit_unsupported") {
		t.Fatalf("create with cpu and pids limits = %v; want 400 limit_unsupported", err)
	}
	sb, err = svc.Create(f.ctx, api.CreateSandboxRequest{Limits: &api.Limits{CPU: 1, Pids: 32}, LimitsBestEffort: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sb.UnenforcedLimits, []string{"cpu", "pids"}) || sb.Limits.CPU != 1 || sb.Limits.MemoryMB != 256 {
		t.Fatalf("best effort: limits %+v, unenforced %v", sb.Limits, sb.UnenforcedLimits)
	}
	if got := svc.Info().Limits.Default; got != (api.Limits{MemoryMB: 256}) {
		t.Fatalf("info's default limits = %+v; want what a sandbox gets", got)
	}
}

// TestDriverNotLoaded: a sandbox recorded with a driver this server has
// not loaded shows as unavailable, is refused with 503, and recovery and
// reaping leave it untouched.
func TestDriverNotLoaded(t *testing.T) {
	f := newFixture(t, nil)
	rec := &store.Sandbox{State: api.StateRunning, Template: "host", Driver: "firecracker", Handle: []byte(`{"v":1}`)}
	if err := f.st.CreateSandbox(f.ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := f.svc.Get(f.ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != api.StateUnavailable || got.Error == "" {
		t.Fatalf("shown as %s (%q); want unavailable with the reason", got.State, got.Error)
	}
	for name, call := range map[string]func() error{
		"destroy": func() error { return f.svc.Destroy(f.ctx, rec.ID) },
		"stop":    func() error { _, err := f.svc.Stop(f.ctx, rec.ID); return err },
		"exec":    func() error { _, err := f.svc.Exec(f.ctx, rec.ID, api.ExecRequest{Cmd: []string{"true"}}); return err },
	} {
		if err := call(); !errors.Is(err, errdefs.ErrUnavailable) || !errdefs.HasCode(err, "driver_unavailable") {
			t.Errorf("%s = %v; want 503 driver_unavailable", name, err)
		}
	}
	if err := f.svc.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, err := f.st.GetSandbox(tenancy.System(context.Background()), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != api.StateRunning || string(after.Handle) != `{"v":1}` {
		t.Fatalf("after recovery: %s %s; want it untouched", after.State, after.Handle)
	}
	if _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{Driver: "firecracker"}); !errdefs.HasCode(err, "invalid_driver") {
		t.Fatalf("create on a driver this build lacks = %v; want invalid_driver", err)
	}
}
