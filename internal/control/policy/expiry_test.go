package policy

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// TestExpiryActions: a running sandbox gets sandbox.expiring once before
// its timeout ends (again after a new lifetime); on_expiry stop stops it
// with its files and its clock held, destroy destroys it.
func TestExpiryActions(t *testing.T) {
	f := newFixture(t, func(c *sandbox.Config) { c.Settings.ExpiryWarningS = 60 })
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
	f.tickExpiry(t, sys, now)                     // two minutes left: no warning
	f.tickExpiry(t, sys, now.Add(90*time.Second)) // 30 s left: warned
	f.tickExpiry(t, sys, now.Add(95*time.Second)) // once
	if n := count(keep.ID, api.EventSandboxExpiring); n != 1 {
		t.Fatalf("%d sandbox.expiring events; want 1", n)
	}
	if _, err := f.svc.SetTimeout(f.ctx, keep.ID, api.TimeoutRequest{TimeoutS: 100}); err != nil {
		t.Fatal(err)
	}
	f.tickExpiry(t, sys, time.Now().Add(50*time.Second))
	if n := count(keep.ID, api.EventSandboxExpiring); n != 2 {
		t.Errorf("%d sandbox.expiring events after a new lifetime; want 2", n)
	}
	f.tickExpiry(t, sys, time.Now().Add(200*time.Second))
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
