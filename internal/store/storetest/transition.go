package storetest

import (
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// testTransition: a change of state names the states it expects; of many
// racing changes from one state exactly one wins, and the losers change
// nothing.
func testTransition(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctx, nil) // running
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			_, errs[i] = store.Transition(ctx, s, sb.ID, []api.SandboxState{api.StateRunning}, api.StateStopping,
				func(x *store.Sandbox) { x.Error = "winner" })
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		default:
			wantErr(t, "losing transition", err, errdefs.ErrConflict, "sandbox_state_conflict")
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d racing transitions from running won; want exactly 1", won, racers)
	}
	got, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != api.StateStopping || got.Error != "winner" {
		t.Fatalf("after the race: state %s, error %q; want stopping, winner", got.State, got.Error)
	}
	// From a state not named: refused, nothing written.
	_, err = store.Transition(ctx, s, sb.ID, []api.SandboxState{api.StateStopped}, api.StateStarting, func(x *store.Sandbox) { x.Error = "loser" })
	wantErr(t, "transition from a state it is not in", err, errdefs.ErrConflict, "sandbox_state_conflict")
	if got, _ := s.GetSandbox(ctx, sb.ID); got.State != api.StateStopping || got.Error != "winner" {
		t.Fatalf("a refused transition wrote: state %s, error %q", got.State, got.Error)
	}
}
