package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

// noEvents is a store whose event log refuses every append.
type noEvents struct {
	store.Store
}

func (noEvents) AppendEvent(context.Context, *store.Event) error {
	return errors.New("event log unavailable")
}

type fixture struct {
	st     store.Store
	drv    *fake.Driver
	svc    *Service
	logs   *testutil.Buffer
	ctx    context.Context // a member of tenant
	tenant string
}

func newFixture(t *testing.T, wrap func(store.Store) store.Store) *fixture {
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
	f := &fixture{st: st, drv: drv, logs: &testutil.Buffer{}, tenant: tn.ID,
		ctx: tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, Role: api.RoleMember})}
	var svcStore store.Store = st
	if wrap != nil {
		svcStore = wrap(st)
	}
	f.svc = f.service(t, svcStore)
	return f
}

func (f *fixture) service(t *testing.T, st store.Store) *Service {
	t.Helper()
	cfg := f.config()
	cfg.Store, cfg.Events = st, events.New(st, events.Config{})
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func (f *fixture) config() Config {
	return Config{
		Drivers:         driver.Single(f.drv),
		Log:             slog.New(slog.NewTextHandler(f.logs, nil)),
		Node:            "node-a",
		DefaultTemplate: "host",
		MaxLimits:       api.Limits{MemoryMB: 1024, CPU: 2, Pids: 256},
		Settings:        api.Settings{DefaultTimeoutS: 3600, MaxTimeoutS: 3600, OnExpiry: api.OnExpiryDestroy, OnIdle: api.OnExpiryPause},
		MaxOutputBytes:  1 << 20,
		MaxFileBytes:    1 << 20,
		TeardownTimeout: 5 * time.Second,
	}
}

// events returns the sandbox's events as read through the store.
func (f *fixture) events(t *testing.T, id string) []store.Event {
	t.Helper()
	evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{SandboxID: id})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func types(evs []store.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func TestEventsOfALife(t *testing.T) {
	f := newFixture(t, nil)
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The request goes away while the driver stops the sandbox: the stop
	// still finishes, and its event is still recorded.
	reqCtx, cancel := context.WithCancel(f.ctx)
	f.drv.Hook(fake.OpStop, func(context.Context, string) error { cancel(); return nil })
	if _, err := f.svc.Stop(reqCtx, sb.ID); err != nil {
		t.Fatal(err)
	}
	f.drv.Hook(fake.OpStop, nil)
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil { // already stopped: no event
		t.Fatal(err)
	}
	// So does a start (a forwarding node that died took the request
	// with it: the sandbox was left starting, its agent running).
	reqCtx, cancel = context.WithCancel(f.ctx)
	f.drv.Hook(fake.OpStart, func(context.Context, string) error { cancel(); return nil })
	if _, err := f.svc.Start(reqCtx, sb.ID); err != nil {
		t.Fatal(err)
	}
	f.drv.Hook(fake.OpStart, nil)
	if got, err := f.svc.Get(f.ctx, sb.ID); err != nil || got.State != api.StateRunning {
		t.Fatalf("after a start whose request went: %s, %v; want running", got.State, err)
	}
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil { // already destroyed: no event
		t.Fatal(err)
	}
	evs := f.events(t, sb.ID)
	want := []string{api.EventSandboxCreated, api.EventSandboxStopped, api.EventSandboxStarted, api.EventSandboxDestroyed}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v\nlogs:\n%s", got, want, f.logs)
	}
	for _, e := range evs {
		if e.TenantID != f.tenant || e.Message == "" {
			t.Errorf("event %+v: want tenant %s and a message", e, f.tenant)
		}
	}
	if evs[0].Data["template"] != "host" || evs[0].Data["driver"] != "fake" {
		t.Errorf("created data = %v", evs[0].Data)
	}
}

func TestFailedEventIsUserSafe(t *testing.T) {
	f := newFixture(t, nil)
	failCreate := errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", errors.New("mkdir /srv/secret/path: no space"),
		"the driver could not create the sandbox")
	f.drv.Hook(fake.OpCreate, func(context.Context, string) error { return failCreate })
	if _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{}); err == nil {
		t.Fatal("Create succeeded")
	}
	evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != api.EventSandboxFailed || evs[0].SandboxID == "" {
		t.Fatalf("events = %+v, want one failed event about the sandbox", evs)
	}
	e := evs[0]
	if !strings.Contains(e.Message, "the driver could not create the sandbox") || e.Data["reason"] != "the driver could not create the sandbox" {
		t.Errorf("failed event = %q %v, want the user-safe reason", e.Message, e.Data)
	}
	if strings.Contains(e.Message, "secret") || strings.Contains(e.Message, "no space") {
		t.Errorf("failed event %q shows the internal cause", e.Message)
	}

	// A destroy the driver cannot finish fails the sandbox, and says so.
	f.drv.Hook(fake.OpCreate, nil)
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f.drv.Hook(fake.OpDestroy, func(context.Context, string) error { return errors.New("umount: busy") })
	if err := f.svc.Destroy(f.ctx, sb.ID); err == nil {
		t.Fatal("Destroy succeeded")
	}
	if got := types(f.events(t, sb.ID)); !slices.Equal(got, []string{api.EventSandboxCreated, api.EventSandboxFailed}) {
		t.Errorf("events of a failed destroy = %v", got)
	}
}

func TestEmitFailureDoesNotFailTheOperation(t *testing.T) {
	f := newFixture(t, func(st store.Store) store.Store { return noEvents{st} })
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatalf("Create with a broken event log: %v", err)
	}
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatalf("Stop with a broken event log: %v", err)
	}
	if _, err := f.svc.Start(f.ctx, sb.ID); err != nil {
		t.Fatalf("Start with a broken event log: %v", err)
	}
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatalf("Destroy with a broken event log: %v", err)
	}
	if n := strings.Count(f.logs.String(), "record event"); n != 4 {
		t.Errorf("%d logged event failures, want 4:\n%s", n, f.logs)
	}
}

func TestExpiredEvents(t *testing.T) {
	f := newFixture(t, nil)
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{TimeoutS: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Expire(tenancy.System(context.Background()), sb.ID, time.Now().Add(2*time.Second))
	evs := f.events(t, sb.ID)
	want := []string{api.EventSandboxCreated, api.EventSandboxExpired, api.EventSandboxDestroyed}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v\nlogs:\n%s", got, want, f.logs)
	}
	if evs[1].Data["timeout_s"] != float64(1) || evs[1].TenantID != f.tenant {
		t.Errorf("expired event = %+v", evs[1])
	}
}

func TestRecoverEvents(t *testing.T) {
	f := newFixture(t, nil)
	running, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	creating := &store.Sandbox{State: api.StateCreating, Template: "host", Driver: "fake"}
	if err := f.st.CreateSandbox(f.ctx, creating); err != nil {
		t.Fatal(err)
	}
	// A new control plane finds the running sandbox's agent gone (the
	// host restarted), and the other caught mid-create.
	fake.Shutdown(f.drv)
	again := f.service(t, f.st)
	if err := again.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := f.events(t, running.ID)
	if got := types(evs); !slices.Equal(got, []string{api.EventSandboxCreated, api.EventSandboxStopped}) {
		t.Fatalf("events of the lost sandbox = %v", got)
	}
	if r, _ := evs[1].Data["reason"].(string); !strings.Contains(evs[1].Message, "after the control plane restarted") || r == "" {
		t.Errorf("stopped event = %q %v, want the reason", evs[1].Message, evs[1].Data)
	}
	evs = f.events(t, creating.ID)
	if len(evs) != 1 || evs[0].Type != api.EventSandboxFailed || !strings.Contains(evs[0].Message, "while the sandbox was being created") {
		t.Errorf("events of the half-created sandbox = %+v", evs)
	}
}

// TestServiceEventsWakeStreams: every event the service records wakes its
// tenant's streams, and only after it is stored.
func TestServiceEventsWakeStreams(t *testing.T) {
	f := newFixture(t, nil)
	sub := f.svc.events.Notifier().Subscribe(f.tenant)
	defer sub.Close()
	other := f.svc.events.Notifier().Subscribe(ids.New())
	defer other.Close()

	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !woken(sub) {
		t.Fatal("create did not wake the tenant's stream")
	}
	if evs := f.events(t, sb.ID); len(evs) != 1 {
		t.Fatalf("woken before the event was stored: %v", types(evs))
	}
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if !woken(sub) {
		t.Fatal("destroy did not wake the tenant's stream")
	}
	if woken(other) {
		t.Fatal("another tenant's stream was woken")
	}

	// AppendEvent, for events recorded outside the lifecycle.
	e := &events.Event{SandboxID: sb.ID, Type: api.EventProcessExited, Message: "process 7 exited with code 0",
		Data: map[string]any{"pid": 7, "exit_code": 0}}
	if err := f.svc.events.AppendEvent(f.ctx, e); err != nil {
		t.Fatal(err)
	}
	if w := woken(sub); e.ID == "" || e.TenantID != f.tenant || !w {
		t.Fatalf("AppendEvent stored %+v, woke the stream: %v", e, w)
	}

	// A failed append wakes nobody.
	bad := &events.Event{SandboxID: "no-such-sandbox", Type: api.EventProcessExited, Message: "x"}
	if err := f.svc.events.AppendEvent(tenancy.With(context.Background(), tenancy.Principal{TenantID: f.tenant}), bad); err == nil {
		t.Fatal("append about an unknown sandbox succeeded")
	}
	if woken(sub) {
		t.Fatal("a failed append woke the stream")
	}
}

// woken reports whether sub has a wake waiting, taking it.
func woken(sub *events.Subscription) bool {
	select {
	case <-sub.Wake():
		return true
	default:
		return false
	}
}

// failRunning is a store that refuses every write that would record a
// sandbox running: a create's last write, as a database that goes away
// mid-create fails it.
type failRunning struct {
	store.Store
}

func (s failRunning) UpdateSandbox(ctx context.Context, id string, fn func(*store.Sandbox) error) (*store.Sandbox, error) {
	return s.Store.UpdateSandbox(ctx, id, func(sb *store.Sandbox) error {
		if err := fn(sb); err != nil {
			return err
		}
		if sb.State == api.StateRunning {
			return errors.New("the database went away")
		}
		return nil
	})
}

// TestCreateRollsBackLastWrite: a create whose last write (the record
// running, with its handle) fails answers that error, destroys what the
// driver made and records the sandbox failed, where it used to panic on
// the record the failed write did not return.
func TestCreateRollsBackLastWrite(t *testing.T) {
	f := newFixture(t, func(st store.Store) store.Store { return failRunning{st} })
	if _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{}); err == nil || !strings.Contains(err.Error(), "the database went away") {
		t.Fatalf("Create = %v; want the failed write's error", err)
	}
	if live := f.drv.Live(); len(live) != 0 {
		t.Errorf("the driver still runs %v after the rollback", live)
	}
	list, _, err := f.st.ListSandboxes(f.ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].State != api.StateFailed {
		t.Fatalf("records after the rollback = %+v; want one, failed", list)
	}
}
