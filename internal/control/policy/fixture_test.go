package policy

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

// fixture is a sandbox service on the fake driver, with the policies
// over it: the tests tick them by hand, at the times they choose.
type fixture struct {
	st     store.Store
	svc    *sandbox.Service
	run    *Runner
	logs   *testutil.Buffer
	ctx    context.Context // a member of the tenant
	memory HostMemory      // what the memory policy reads; 50% free unless set
}

func newFixture(t *testing.T, mutate func(*sandbox.Config)) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn := store.Tenant{ID: ids.New(), Name: "t"}
	if err := st.CreateTenant(tenancy.System(context.Background()), tn); err != nil {
		t.Fatal(err)
	}
	drv := fake.New(fake.Config{Dir: t.TempDir()})
	if err := drv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Shutdown(drv) })
	f := &fixture{st: st, logs: &testutil.Buffer{},
		ctx:    tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, Role: api.RoleMember}),
		memory: func() (uint64, uint64, error) { return 50, 100, nil }}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := sandbox.Config{
		Store: st, Drivers: driver.Single(drv), Events: events.New(st, events.Config{}), Node: "node-a", Log: log,
		DefaultTemplate: "host",
		DefaultLimits:   api.Limits{MemoryMB: 256, CPU: 1, Pids: 64},
		MaxLimits:       api.Limits{MemoryMB: 1024, CPU: 2, Pids: 256},
		Settings:        api.Settings{DefaultTimeoutS: 3600, MaxTimeoutS: 3600, OnExpiry: api.OnExpiryDestroy, OnIdle: api.OnExpiryPause},
		MaxFileBytes:    1 << 20, MaxOutputBytes: 1 << 20, TeardownTimeout: 10 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if f.svc, err = sandbox.New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.svc.Close)
	f.run = New(f.svc, Config{Tick: time.Second, SweepEvery: time.Hour, Log: log,
		HostMemory: func() (uint64, uint64, error) { return f.memory() }})
	return f
}

func (f *fixture) create(t *testing.T) api.Sandbox {
	t.Helper()
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func (f *fixture) state(t *testing.T, id string) api.SandboxState {
	t.Helper()
	sb, err := f.svc.Get(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return sb.State
}

// waitEvent waits up to 10 s for an event of sandbox id of type typ that
// ok accepts.
func (f *fixture) waitEvent(t *testing.T, id, typ string, ok func(store.Event) bool) store.Event {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{SandboxID: id, Types: []string{typ}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if ok(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event came; logs:\n%s", typ, f.logs)
		}
	}
}

// reasonOf accepts an event whose reason is reason (and whose op is op,
// when given).
func reasonOf(reason string, op ...string) func(store.Event) bool {
	return func(e store.Event) bool {
		return e.Data["reason"] == reason && (len(op) == 0 || e.Data["op"] == op[0])
	}
}

// fleet lists the sandboxes a tick hands the policies: running, paused
// and stopped.
func (f *fixture) fleet(t *testing.T) (running, paused, stopped []*store.Sandbox) {
	t.Helper()
	recs, err := f.svc.Owned(tenancy.System(context.Background()), api.StateRunning, api.StatePaused, api.StateStopped)
	if err != nil {
		t.Fatal(err)
	}
	return byState(recs)
}

// tickExpiry, tickIdle and tickDisk tick one policy as Runner.Tick does.
func (f *fixture) tickExpiry(t *testing.T, ctx context.Context, now time.Time) {
	running, _, stopped := f.fleet(t)
	f.run.expiry.tick(ctx, now, append(running, stopped...))
}

func (f *fixture) tickIdle(t *testing.T, ctx context.Context, now time.Time) {
	running, paused, _ := f.fleet(t)
	f.run.idle.tick(ctx, now, running, paused)
}

func (f *fixture) tickDisk(t *testing.T, ctx context.Context, now time.Time) {
	running, _, _ := f.fleet(t)
	f.run.disk.tick(ctx, now, running)
}
