package policy

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// TestIdle: a sandbox with no calls and no output for its window gets
// the idle action with its event; keepalive, output and a call in flight
// keep one from it; a window of its own comes first.
func TestIdle(t *testing.T) {
	f := newFixture(t, func(c *sandbox.Config) { c.Settings.IdleTimeoutS = 60; c.Settings.OnIdle = api.OnExpiryStop })
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
	f.tickIdle(t, sys, now.Add(40*time.Second)) // past half the window: output read
	time.Sleep(200 * time.Millisecond)          // the talky one writes on
	f.tickIdle(t, sys, now.Add(70*time.Second))
	if st := f.state(t, quiet.ID); st != api.StateStopped {
		t.Fatalf("idle sandbox: %s; want stopped", st)
	}
	e := f.waitEvent(t, quiet.ID, api.EventSandboxIdle, func(store.Event) bool { return true })
	if e.Data["action"] != api.OnExpiryStop || e.Data["reason"] != sandbox.ReasonIdle {
		t.Errorf("idle event: %+v", e.Data)
	}
	f.waitEvent(t, quiet.ID, api.EventSandboxStopped, reasonOf(sandbox.ReasonIdle))
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
	f.tickIdle(t, sys, now.Add(time.Hour))
	if got := f.state(t, kept.ID); got != api.StateRunning {
		t.Fatalf("with a stream open: %s; want running", got)
	}
	stream.Close()
	f.tickIdle(t, sys, now.Add(2*time.Hour)) // output read
	f.tickIdle(t, sys, now.Add(3*time.Hour))
	if got := f.state(t, kept.ID); got != api.StateStopped {
		t.Fatalf("idle once its stream closed: %s; want stopped", got)
	}
}

// TestMemoryPressure: with the host's memory low, idle windows shrink and
// the action is a pause; critical, paused sandboxes stop, the longest
// paused first.
func TestMemoryPressure(t *testing.T) {
	var availPct uint64 = 50
	f := newFixture(t, func(c *sandbox.Config) {
		c.Settings.IdleTimeoutS = 3600
		c.Settings.OnIdle = api.OnExpiryDestroy
		c.Settings.MemoryLowPct, c.Settings.MemoryCriticalPct, c.Settings.MinIdleS = 20, 10, 60
	})
	f.memory = func() (uint64, uint64, error) { return availPct, 100, nil }
	sys := tenancy.System(context.Background())
	first, second := f.create(t), f.create(t)
	now := time.Now()
	f.tickIdle(t, sys, now.Add(10*time.Minute)) // 50%: no pressure, 10 min of 60: not idle
	availPct = 15                               // low: the window is 3600 s × 15% = 9 min
	f.tickIdle(t, sys, now.Add(10*time.Minute)) // output read
	f.tickIdle(t, sys, now.Add(20*time.Minute))
	for _, sb := range []api.Sandbox{first, second} {
		if st := f.state(t, sb.ID); st != api.StatePaused {
			t.Fatalf("under pressure an idle sandbox is %s; want paused (not destroyed: on_idle gives way to a pause)", st)
		}
		f.waitEvent(t, sb.ID, api.EventSandboxPaused, reasonOf(sandbox.ReasonPressure))
	}
	// Critical: the longest paused stops first, and once memory is back
	// the other stays paused.
	availPct = 5
	f.memory = func() (uint64, uint64, error) {
		defer func() { availPct = 30 }() // the first stop frees enough
		return availPct, 100, nil
	}
	f.tickIdle(t, sys, now.Add(21*time.Minute))
	if a, b := f.state(t, first.ID), f.state(t, second.ID); a != api.StateStopped || b != api.StatePaused {
		t.Fatalf("critical: first %s, second %s; want stopped, paused", a, b)
	}
	f.waitEvent(t, first.ID, api.EventSandboxStopped, reasonOf(sandbox.ReasonPressure))
}
