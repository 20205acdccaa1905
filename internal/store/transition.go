package store

import (
	"context"
	"slices"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Transition moves a sandbox from one of the states in from to state to,
// in one write transaction, and lets fn change the rest of the record on
// the way. A sandbox in any other state is left alone and the answer is an
// errdefs.ErrConflict (code "sandbox_state_conflict") naming the state it
// was in: every change of state says what it expects, so two changes that
// race cannot both win.
func Transition(ctx context.Context, st Store, id string, from []api.SandboxState, to api.SandboxState, fn func(*Sandbox)) (*Sandbox, error) {
	return st.UpdateSandbox(ctx, id, func(sb *Sandbox) error {
		if !slices.Contains(from, sb.State) {
			return StateConflict(sb, from)
		}
		sb.State = to
		if fn != nil {
			fn(sb)
		}
		return nil
	})
}

// StateConflict is the error of a sandbox found in a state other than the
// ones an operation expects.
func StateConflict(sb *Sandbox, want []api.SandboxState) error {
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = string(w)
	}
	return errdefs.Conflict("sandbox_state_conflict", "sandbox %s is %s; this needs it %s", sb.ID, sb.State, strings.Join(names, " or "))
}
