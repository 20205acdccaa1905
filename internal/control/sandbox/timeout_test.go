package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// TestStoppedClockHolds: a stopped sandbox's clock does not run, so no
// timeout destroys its files; its start gives it what it had left.
func TestStoppedClockHolds(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{TimeoutS: 600})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := f.svc.Stop(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stopped.ExpiresAt != nil || stopped.TimeoutS < 599 || stopped.TimeoutS > 600 {
		t.Fatalf("stopped: expires_at %v, timeout_s %d; want no expiry and about 600 s left", stopped.ExpiresAt, stopped.TimeoutS)
	}
	// Long past its first expiry: still there.
	f.svc.reapExpired(tenancy.System(context.Background()), time.Now().Add(time.Hour))
	if st := f.state(t, sb.ID); st != api.StateStopped {
		t.Fatalf("a stopped sandbox past its expiry is %s; want stopped", st)
	}
	before := time.Now().Truncate(time.Millisecond) // the store keeps microseconds
	started, err := f.svc.Start(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if started.ExpiresAt == nil || started.ExpiresAt.Before(before.Add(598*time.Second)) || started.ExpiresAt.After(time.Now().Add(601*time.Second)) {
		t.Fatalf("started: expires_at %v; want what was left from the start", started.ExpiresAt)
	}
}

// TestSetTimeout: a running sandbox's lifetime runs from the call, a
// stopped one's from its next start; bounds are refused.
func TestSetTimeout(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{TimeoutS: 60})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Truncate(time.Millisecond) // the store keeps microseconds
	got, err := f.svc.SetTimeout(f.ctx, sb.ID, api.TimeoutRequest{TimeoutS: 1800})
	if err != nil {
		t.Fatal(err)
	}
	if got.TimeoutS != 1800 || got.ExpiresAt == nil || got.ExpiresAt.Before(before.Add(1800*time.Second)) {
		t.Errorf("extended: %+v", got)
	}
	for _, bad := range []int{0, -1, 3601} {
		if _, err := f.svc.SetTimeout(f.ctx, sb.ID, api.TimeoutRequest{TimeoutS: bad}); !errdefs.HasCode(err, "invalid_timeout") {
			t.Errorf("timeout_s %d: %v; want invalid_timeout", bad, err)
		}
	}
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	got, err = f.svc.SetTimeout(f.ctx, sb.ID, api.TimeoutRequest{TimeoutS: 120})
	if err != nil || got.ExpiresAt != nil || got.TimeoutS != 120 {
		t.Fatalf("set on a stopped sandbox: %+v, %v; want 120 s held for its start", got, err)
	}
	before = time.Now().Truncate(time.Millisecond)
	got, err = f.svc.Start(f.ctx, sb.ID)
	if err != nil || got.ExpiresAt == nil || got.ExpiresAt.Before(before.Add(119*time.Second)) || got.ExpiresAt.After(time.Now().Add(121*time.Second)) {
		t.Fatalf("start after a set: %+v, %v", got, err)
	}
	if err := f.svc.Destroy(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetTimeout(f.ctx, sb.ID, api.TimeoutRequest{TimeoutS: 10}); !errdefs.HasCode(err, "sandbox_state_conflict") {
		t.Errorf("set on a destroyed sandbox: %v", err)
	}
}

// TestExpiryActions: a running sandbox gets sandbox.expiring once before
// its timeout ends (again after a new lifetime); on_expiry stop stops it
// with its files and its clock held, destroy destroys it.
func TestExpiryActions(t *testing.T) {
	f := newLiveFixture(t, func(c *Config) { c.Settings.ExpiryWarningS = 60 })
	sys := tenancy.System(context.Background())
	keep, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{TimeoutS: 120, OnExpiry: api.OnExpiryStop})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{TimeoutS: 120})
	if err != nil {
		t.Fatal(err)
	}
	if gone.OnExpiry != api.OnExpiryDestroy || keep.OnExpiry != api.OnExpiryStop {
		t.Fatalf("on_expiry shown as %q and %q", keep.OnExpiry, gone.OnExpiry)
	}
	if _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{OnExpiry: "hibernate"}); !errdefs.HasCode(err, "invalid_on_expiry") {
		t.Errorf("on_expiry hibernate: %v; want invalid_on_expiry", err)
	}
	count := func(id, typ string) int {
		t.Helper()
		n := 0
		evs, _, err := f.st.ListEvents(f.ctx, store.EventQuery{SandboxID: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Type == typ {
				n++
			}
		}
		return n
	}
	now := time.Now()
	f.svc.reapExpired(sys, now)                     // two minutes left: no warning
	f.svc.reapExpired(sys, now.Add(90*time.Second)) // 30 s left: warned
	f.svc.reapExpired(sys, now.Add(95*time.Second)) // once
	if n := count(keep.ID, api.EventSandboxExpiring); n != 1 {
		t.Fatalf("%d sandbox.expiring events; want 1", n)
	}
	if _, err := f.svc.SetTimeout(f.ctx, keep.ID, api.TimeoutRequest{TimeoutS: 100}); err != nil {
		t.Fatal(err)
	}
	f.svc.reapExpired(sys, time.Now().Add(50*time.Second))
	if n := count(keep.ID, api.EventSandboxExpiring); n != 2 {
		t.Errorf("%d sandbox.expiring events after a new lifetime; want 2", n)
	}
	f.svc.reapExpired(sys, time.Now().Add(200*time.Second))
	if st := f.state(t, keep.ID); st != api.StateStopped {
		t.Errorf("on_expiry stop: %s; want stopped", st)
	}
	if st := f.state(t, gone.ID); st != api.StateDestroyed {
		t.Errorf("on_expiry destroy: %s; want destroyed", st)
	}
	stopped, err := f.svc.Get(f.ctx, keep.ID)
	if err != nil || stopped.ExpiresAt != nil || stopped.TimeoutS != 100 {
		t.Errorf("stopped at its expiry: %+v, %v; want no expiry and its whole lifetime (100 s) for its next start", stopped, err)
	}
	if n := count(keep.ID, api.EventSandboxExpired); n != 1 {
		t.Errorf("%d sandbox.expired events for the stopped one; want 1", n)
	}
}
