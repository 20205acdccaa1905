package sandbox

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
)

// reasonOf returns a check of an event's reason (and op, when given).
func reasonOf(reason string, op ...string) func(store.Event) bool {
	return func(e store.Event) bool {
		return e.Data["reason"] == reason && (len(op) == 0 || e.Data["op"] == op[0])
	}
}

// TestPauseResume: a pause holds the clock and freezes through the
// driver; a call through the door resumes it; a paused sandbox stops,
// starts and is destroyed as a running one is; a failed pause leaves it
// running with its clock.
func TestPauseResume(t *testing.T) {
	f := newLiveFixture(t, nil)
	sys := tenancy.System(context.Background())
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{TimeoutS: 600})
	if err != nil {
		t.Fatal(err)
	}
	paused, err := f.svc.Pause(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if paused.State != api.StatePaused || paused.PausedAt == nil || paused.ExpiresAt != nil || paused.TimeoutS < 599 || !f.drv.Paused(sb.ID) {
		t.Fatalf("paused: %+v (driver paused: %v)", paused, f.drv.Paused(sb.ID))
	}
	f.waitEvent(t, sb.ID, api.EventSandboxPaused, reasonOf(reasonRequest))
	if again, err := f.svc.Pause(f.ctx, sb.ID); err != nil || again.State != api.StatePaused {
		t.Fatalf("a second pause: %+v, %v", again, err)
	}
	f.svc.reapExpired(sys, time.Now().Add(time.Hour))
	if st := f.state(t, sb.ID); st != api.StatePaused {
		t.Fatalf("a paused sandbox past its expiry is %s", st)
	}

	// A call resumes it: the same agent answers.
	res, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"echo", "awake"}})
	if err != nil || res.Stdout != "awake\n" {
		t.Fatalf("exec on a paused sandbox: %+v, %v", res, err)
	}
	f.waitEvent(t, sb.ID, api.EventSandboxResumed, reasonOf(reasonAuto, "exec"))
	got, err := f.svc.Get(f.ctx, sb.ID)
	if err != nil || got.State != api.StateRunning || got.PausedAt != nil || got.ExpiresAt == nil || f.drv.Paused(sb.ID) {
		t.Fatalf("after the auto-resume: %+v, %v", got, err)
	}

	// Paused, then stopped and started.
	if _, err := f.svc.Pause(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	stopped, err := f.svc.Stop(f.ctx, sb.ID)
	if err != nil || stopped.State != api.StateStopped || stopped.PausedAt != nil || stopped.ExpiresAt != nil {
		t.Fatalf("stop of a paused sandbox: %+v, %v", stopped, err)
	}
	if _, err := f.svc.Start(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}

	// A pause the driver fails leaves it running, clock and all.
	f.drv.Hook(fake.OpPause, func(context.Context, string) error { return errors.New("frozen solid") })
	if _, err := f.svc.Pause(f.ctx, sb.ID); err == nil {
		t.Fatal("a failed pause returned no error")
	}
	f.drv.Hook(fake.OpPause, nil)
	got, err = f.svc.Get(f.ctx, sb.ID)
	if err != nil || got.State != api.StateRunning || got.ExpiresAt == nil {
		t.Fatalf("after a failed pause: %+v, %v", got, err)
	}
	if _, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Fatalf("exec after a failed pause: %v", err)
	}

	if _, err := f.svc.Pause(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if st := f.state(t, sb.ID); st != api.StateDestroyed {
		t.Fatalf("destroy of a paused sandbox: %s", st)
	}
}

// TestRecoverPaused: after a restart a paused sandbox is frozen again
// (a crash may have come between a thaw and its record) and stays
// paused, and the sweep leaves it be.
func TestRecoverPaused(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := f.svc.Pause(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	// The crash: thawed, but the store still says paused.
	if err := f.drv.Resume(context.Background(), f.handle(t, sb.ID)); err != nil {
		t.Fatal(err)
	}
	pauses := f.drv.Calls(fake.OpPause)
	again := f.restart(t)
	if st := f.state(t, sb.ID); st != api.StatePaused || !f.drv.Paused(sb.ID) || f.drv.Calls(fake.OpPause) != pauses+1 {
		t.Fatalf("after a restart: %s, driver paused %v", st, f.drv.Paused(sb.ID))
	}
	if !slices.Contains(f.drv.Live(), sb.ID) {
		t.Fatal("the sweep took a paused sandbox")
	}
	if _, err := again.Resume(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
}

// TestIdle: a sandbox with no calls and no output for its window gets
// the idle action with its event; keepalive, output and a call in flight
// keep one from it; a window of its own comes first.
func TestIdle(t *testing.T) {
	f := newLiveFixture(t, func(c *Config) { c.Settings.IdleTimeoutS = 60; c.Settings.OnIdle = api.OnExpiryStop })
	sys := tenancy.System(context.Background())
	quiet := f.create(t)
	kept := f.create(t)
	if _, err := f.svc.Keepalive(f.ctx, kept.ID, api.KeepaliveRequest{ForS: 3600}); err != nil {
		t.Fatal(err)
	}
	talky := f.create(t)
	if _, err := f.svc.StartProcess(f.ctx, talky.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do echo tick; sleep 0.05; done"}}); err != nil {
		t.Fatal(err)
	}
	patient, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{IdleTimeoutS: 7200})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f.svc.reapIdle(sys, now.Add(40*time.Second)) // past half the window: output read
	time.Sleep(200 * time.Millisecond)           // the talky one writes on
	f.svc.reapIdle(sys, now.Add(70*time.Second))
	if st := f.state(t, quiet.ID); st != api.StateStopped {
		t.Fatalf("idle sandbox: %s; want stopped", st)
	}
	e := f.waitEvent(t, quiet.ID, api.EventSandboxIdle, func(store.Event) bool { return true })
	if e.Data["action"] != api.OnExpiryStop || e.Data["reason"] != reasonIdle {
		t.Errorf("idle event: %+v", e.Data)
	}
	f.waitEvent(t, quiet.ID, api.EventSandboxStopped, reasonOf(reasonIdle))
	for _, sb := range []api.Sandbox{kept, talky, patient} {
		if st := f.state(t, sb.ID); st != api.StateRunning {
			t.Errorf("sandbox %s: %s; want running", sb.ID, st)
		}
	}
	// A call in flight is activity however long it lasts; once it ends,
	// the keepalive gone, the sandbox is idle a window later.
	p, err := f.svc.StartProcess(f.ctx, kept.ID, api.ProcessRequest{Cmd: []string{"sleep", "3600"}})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := f.svc.ProcessOutput(f.ctx, kept.ID, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Keepalive(f.ctx, kept.ID, api.KeepaliveRequest{}); err != nil {
		t.Fatal(err)
	}
	f.svc.reapIdle(sys, now.Add(time.Hour))
	if got := f.state(t, kept.ID); got != api.StateRunning {
		t.Fatalf("with a stream open: %s; want running", got)
	}
	stream.Close()
	f.svc.reapIdle(sys, now.Add(2*time.Hour)) // output read
	f.svc.reapIdle(sys, now.Add(3*time.Hour))
	if got := f.state(t, kept.ID); got != api.StateStopped {
		t.Fatalf("idle once its stream closed: %s; want stopped", got)
	}
}

// handle is the driver handle the store keeps of sandbox id.
func (f *liveFixture) handle(t *testing.T, id string) driver.Handle {
	t.Helper()
	rec, err := f.st.GetSandbox(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.svc.decodeHandle(rec)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestMemoryPressure: with the host's memory low, idle windows shrink and
// the action is a pause; critical, paused sandboxes stop, the longest
// paused first.
func TestMemoryPressure(t *testing.T) {
	var availPct uint64 = 50
	f := newLiveFixture(t, func(c *Config) {
		c.Settings.IdleTimeoutS = 3600
		c.Settings.OnIdle = api.OnExpiryDestroy
		c.Settings.MemoryLowPct, c.Settings.MemoryCriticalPct, c.Settings.MinIdleS = 20, 10, 60
		c.HostMemory = func() (uint64, uint64, error) { return availPct, 100, nil }
	})
	sys := tenancy.System(context.Background())
	first, second := f.create(t), f.create(t)
	now := time.Now()
	f.svc.reapIdle(sys, now.Add(10*time.Minute)) // 50%: no pressure, 10 min of 60: not idle
	availPct = 15                                // low: the window is 3600 s × 15% = 9 min
	f.svc.reapIdle(sys, now.Add(10*time.Minute)) // output read
	f.svc.reapIdle(sys, now.Add(20*time.Minute))
	for _, sb := range []api.Sandbox{first, second} {
		if st := f.state(t, sb.ID); st != api.StatePaused {
			t.Fatalf("under pressure an idle sandbox is %s; want paused (not destroyed: on_idle gives way to a pause)", st)
		}
		f.waitEvent(t, sb.ID, api.EventSandboxPaused, reasonOf(reasonPressure))
	}
	// Critical: the longest paused stops first, and once memory is back
	// the other stays paused.
	availPct = 5
	f.svc.cfg.HostMemory = func() (uint64, uint64, error) {
		defer func() { availPct = 30 }() // the first stop frees enough
		return availPct, 100, nil
	}
	f.svc.reapIdle(sys, now.Add(21*time.Minute))
	if a, b := f.state(t, first.ID), f.state(t, second.ID); a != api.StateStopped || b != api.StatePaused {
		t.Fatalf("critical: first %s, second %s; want stopped, paused", a, b)
	}
	f.waitEvent(t, first.ID, api.EventSandboxStopped, reasonOf(reasonPressure))
}
