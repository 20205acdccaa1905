package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
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
	f.svc.Expire(tenancy.System(context.Background()), sb.ID, time.Now().Add(time.Hour))
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
