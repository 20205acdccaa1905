package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

// The lifecycle races, on the shared fake driver (a real agent in the test
// process) and a real SQLite store. They are meant for -race.

type liveFixture struct {
	st   store.Store
	drv  *fake.Driver
	svc  *Service
	ctx  context.Context
	logs *testutil.Buffer
}

func newLiveFixture(t *testing.T, mutate func(*Config)) *liveFixture {
	t.Helper()
	return newLiveFixtureAt(t, filepath.Join(t.TempDir(), sqlite.FileName), mutate)
}

// newLiveFixtureAt is newLiveFixture with its database at path.
func newLiveFixtureAt(t *testing.T, path string, mutate func(*Config)) *liveFixture {
	t.Helper()
	st, err := sqlite.Open(path)
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
	f := &liveFixture{st: st, drv: drv, logs: &testutil.Buffer{},
		ctx: tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, Role: api.RoleMember})}
	cfg := Config{
		Store: st, Drivers: driver.Single(drv), Events: events.New(st, events.Config{}), Node: "node-a",
		Log:             slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DefaultTemplate: "host",
		DefaultLimits:   api.Limits{MemoryMB: 256, CPU: 1, Pids: 64},
		MaxLimits:       api.Limits{MemoryMB: 1024, CPU: 2, Pids: 256},
		Settings:        api.Settings{DefaultTimeoutS: 3600, MaxTimeoutS: 3600, OnExpiry: api.OnExpiryDestroy, OnIdle: api.OnExpiryPause},
		MaxFileBytes:    1 << 20, MaxOutputBytes: 1 << 20, TeardownTimeout: 10 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if f.svc, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.svc.Close)
	return f
}

// withQuotas gives the fixture's tenants default quotas l.
func withQuotas(l api.QuotaLimits) func(*Config) {
	return func(c *Config) { c.Quotas = quota.New(quota.Config{Store: c.Store, Defaults: l}) }
}

func (f *liveFixture) create(t *testing.T) api.Sandbox {
	t.Helper()
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// hold makes op block inside the driver until the returned release is
// called; inside is closed once a call is held.
func hold(d *fake.Driver, op fake.Op) (inside <-chan struct{}, release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	var once, rel sync.Once
	d.Hook(op, func(ctx context.Context, id string) error {
		once.Do(func() { close(in) })
		<-out
		return nil
	})
	return in, func() { rel.Do(func() { close(out) }) }
}

func (f *liveFixture) state(t *testing.T, id string) api.SandboxState {
	t.Helper()
	rec, err := f.st.GetSandbox(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.State
}

func (f *liveFixture) eventTypes(t *testing.T, id string) []string {
	t.Helper()
	evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// TestStopDestroy: a destroy that arrives while a stop is inside the
// driver waits for it and then destroys; the record ends destroyed with
// no handle (it used to end stopped, handle-less, for ever).
func TestStopDestroy(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	inside, release := hold(f.drv, fake.OpStop)
	defer release()
	stopped := make(chan error, 1)
	go func() { _, err := f.svc.Stop(f.ctx, sb.ID); stopped <- err }()
	<-inside
	if got := f.state(t, sb.ID); got != api.StateStopping {
		t.Fatalf("state while the driver stops it = %s, want stopping", got)
	}
	// The destroy waits for the stop's lock, then destroys what the stop
	// left.
	destroyed := make(chan error, 1)
	go func() { destroyed <- f.svc.Destroy(f.ctx, sb.ID) }()
	release()
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-destroyed; err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	rec, err := f.st.GetSandbox(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != api.StateDestroyed || rec.Handle != nil || rec.ExpiresAt != nil {
		t.Fatalf("after stop and destroy: state %s, handle %q, expires %v; want destroyed with neither", rec.State, rec.Handle, rec.ExpiresAt)
	}
	if live := f.drv.Live(); len(live) != 0 {
		t.Fatalf("agents still running: %v", live)
	}
	want := []string{api.EventSandboxCreated, api.EventSandboxStopped, api.EventSandboxDestroyed}
	if got := f.eventTypes(t, sb.ID); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestStartStart: starts that race start one agent; every caller sees
// the sandbox running.
func TestStartStart(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			got, err := f.svc.Start(f.ctx, sb.ID)
			if err == nil && got.State != api.StateRunning {
				err = errors.New("answered " + string(got.State))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	}
	if c := f.drv.Calls(fake.OpStart); c != 1 {
		t.Fatalf("the driver was asked to start %d times; want 1", c)
	}
	if live := f.drv.Live(); len(live) != 1 {
		t.Fatalf("%d agents run; want 1", len(live))
	}
	if _, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Fatalf("exec after the starts: %v", err)
	}
}

// TestCreateDestroy: a destroy of a sandbox still being created waits for
// the create, then destroys it; nothing is left running.
func TestCreateDestroy(t *testing.T) {
	f := newLiveFixture(t, nil)
	inside, release := hold(f.drv, fake.OpCreate)
	defer release()
	created := make(chan error, 1)
	go func() { _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{}); created <- err }()
	<-inside
	list, err := f.svc.List(f.ctx, ListOptions{})
	if err != nil || len(list.Sandboxes) != 1 || list.Sandboxes[0].State != api.StateCreating {
		t.Fatalf("list while creating = %+v, %v; want one creating sandbox", list, err)
	}
	id := list.Sandboxes[0].ID
	destroyed := make(chan error, 1)
	go func() { destroyed <- f.svc.Destroy(f.ctx, id) }()
	release()
	if err := <-created; err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := <-destroyed; err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if got := f.state(t, id); got != api.StateDestroyed {
		t.Fatalf("state %s, want destroyed", got)
	}
	if live := f.drv.Live(); len(live) != 0 {
		t.Fatalf("agents still running: %v", live)
	}
}

// TestExecDestroy: a command running when its sandbox is destroyed ends,
// and its caller is told the sandbox is no longer running (409), not
// that the agent broke.
func TestExecDestroy(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	st, err := f.svc.ExecStream(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo up; exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ev, err := st.Next(); err != nil || string(ev.Data) != "up\n" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	execDone := make(chan error, 1)
	go func() {
		for {
			if _, err := st.Next(); err != nil {
				execDone <- err
				return
			}
		}
	}()
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	err = <-execDone
	if !errors.Is(err, errdefs.ErrConflict) || !errdefs.HasCode(err, "sandbox_not_running") {
		t.Fatalf("exec stream after destroy ended with %v; want 409 sandbox_not_running", err)
	}
	if _, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); !errdefs.HasCode(err, "sandbox_not_running") {
		t.Fatalf("exec on a destroyed sandbox = %v; want sandbox_not_running", err)
	}
}

// TestTransitionsRefuse: calls that do not fit the state are 409s naming
// it, and leave the sandbox as it was.
func TestTransitionsRefuse(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"start": func() error { _, err := f.svc.Start(f.ctx, sb.ID); return err },
		"stop":  func() error { _, err := f.svc.Stop(f.ctx, sb.ID); return err },
	} {
		if err := call(); !errors.Is(err, errdefs.ErrConflict) {
			t.Errorf("%s of a destroyed sandbox = %v, want a conflict", name, err)
		}
	}
	if got := f.state(t, sb.ID); got != api.StateDestroyed {
		t.Fatalf("state %s after refused calls", got)
	}
}

// TestCallQuota: a sandbox takes at most MaxCallsPerSandbox calls at once
// (429 too_many_calls); a place frees when a stream closes.
func TestCallQuota(t *testing.T) {
	f := newLiveFixture(t, func(c *Config) { c.MaxCallsPerSandbox = 2 })
	sb := f.create(t)
	var open []Stream[api.WatchEvent]
	for range 2 {
		w, err := f.svc.Watch(f.ctx, sb.ID, ".", false)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, w)
	}
	if _, err := f.svc.StatFile(f.ctx, sb.ID, "."); !errors.Is(err, errdefs.ErrRateLimited) || !errdefs.HasCode(err, "too_many_calls") {
		t.Fatalf("a third call = %v; want 429 too_many_calls", err)
	}
	open[0].Close()
	open[0].Close() // twice: the place is freed once
	if _, err := f.svc.StatFile(f.ctx, sb.ID, "."); err != nil {
		t.Fatalf("a call after a stream closed: %v", err)
	}
	open[1].Close()
	at, ok := f.svc.LastActivity(sb.ID)
	if !ok || time.Since(at) > time.Minute {
		t.Fatalf("last activity %v, %v; want recorded", at, ok)
	}
	if a, _ := f.svc.Activity(sb.ID); a.Calls != 0 {
		n := a.Calls
		t.Fatalf("%d calls counted after every call ended", n)
	}
}

// TestFilesThroughTheDoor: the typed file calls reach the agent, and a
// write makes missing parents unless told not to.
func TestFilesThroughTheDoor(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := f.svc.WriteFile(f.ctx, sb.ID, "a/b/c.txt", "", true, strings.NewReader("hi")); err != nil {
		t.Fatalf("write with parents: %v", err)
	}
	rc, err := f.svc.ReadFile(f.ctx, sb.ID, "a/b/c.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hi" {
		t.Fatalf("read %q", b)
	}
	if _, err := f.svc.WriteFile(f.ctx, sb.ID, "x/y.txt", "", false, strings.NewReader("no")); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("write without parents into a missing directory = %v, want not found", err)
	}
}
