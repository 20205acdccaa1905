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
	f.waitEvent(t, sb.ID, api.EventSandboxPaused, reasonOf(ReasonRequest))
	if again, err := f.svc.Pause(f.ctx, sb.ID); err != nil || again.State != api.StatePaused {
		t.Fatalf("a second pause: %+v, %v", again, err)
	}
	f.svc.Expire(sys, sb.ID, time.Now().Add(time.Hour))
	if st := f.state(t, sb.ID); st != api.StatePaused {
		t.Fatalf("a paused sandbox past its expiry is %s", st)
	}

	// A call resumes it: the same agent answers.
	res, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"echo", "awake"}})
	if err != nil || res.Stdout != "awake\n" {
		t.Fatalf("exec on a paused sandbox: %+v, %v", res, err)
	}
	f.waitEvent(t, sb.ID, api.EventSandboxResumed, reasonOf(ReasonAuto, "exec"))
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

// TestRecoverLostPaused: a sandbox paused when its node was lost
// (marked unavailable by another node) is paused again, not running,
// when its node restarts.
func TestRecoverLostPaused(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := f.svc.Pause(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Transition(f.ctx, f.st, sb.ID, []api.SandboxState{api.StatePaused}, api.StateUnavailable,
		func(r *store.Sandbox) { r.Error = "its node stopped heartbeating" }); err != nil {
		t.Fatal(err)
	}
	f.restart(t)
	if st := f.state(t, sb.ID); st != api.StatePaused || !f.drv.Paused(sb.ID) {
		t.Fatalf("after its node's restart: %s, driver paused %v; want paused", st, f.drv.Paused(sb.ID))
	}
}

// handle is the driver handle the store keeps of sandbox id.
func (f *liveFixture) handle(t *testing.T, id string) driver.Handle {
	t.Helper()
	rec, err := f.st.GetSandbox(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.svc.seals.decodeHandle(rec)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
