package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// The state machine of a sandbox, as one table: every change of state the
// service makes is an edge below, named by its operation and the state it
// leads to, and transition refuses any other. The store update of an edge
// names the states it may leave from, so two changes that race cannot
// both win (store.Transition). The operations that need a sandbox in some
// states and leave it there are a second table (needs). The diagram and
// tables in docs/ARCHITECTURE.md are rendered from these by a test
// (state_test.go), so the two cannot disagree.

// Op is an operation that moves a sandbox from state to state.
type Op string

// The operations.
const (
	OpCreate  Op = "create"
	OpStart   Op = "start"
	OpStop    Op = "stop"
	OpPause   Op = "pause"
	OpResume  Op = "resume"
	OpRestore Op = "restore"
	OpDestroy Op = "destroy"
	OpFail    Op = "fail"
	OpRecover Op = "recover"
	OpLose    Op = "lose"
	OpAbandon Op = "abandon"
	OpAdopt   Op = "adopt"

	// Operations that leave the state as they find it (needs).
	OpSnapshot  Op = "snapshot"
	OpTimeout   Op = "timeout"
	OpNetwork   Op = "network"
	OpKeepalive Op = "keepalive"
)

// edge is one allowed change of state: by op, from any of from, to to.
// what says when it happens, for the table in docs/ARCHITECTURE.md.
type edge struct {
	op   Op
	from []api.SandboxState
	to   api.SandboxState
	what string
}

// states is a list of states, read better in the table than a slice
// literal.
func states(s ...api.SandboxState) []api.SandboxState { return s }

const (
	creating   = api.StateCreating
	starting   = api.StateStarting
	running    = api.StateRunning
	pausedS    = api.StatePaused
	stopping   = api.StateStopping
	stopped    = api.StateStopped
	destroying = api.StateDestroying
	destroyed  = api.StateDestroyed
	failed     = api.StateFailed
	lostS      = api.StateUnavailable
)

// table is every change of state a sandbox may make. A record is written
// as creating (store.CreateSandbox), so no edge leads into creating.
var table = []edge{
	{OpCreate, states(creating), running, "its driver made it and its agent answers"},
	{OpStart, states(stopped), starting, "admitted; its driver starts its agent"},
	{OpStart, states(starting), running, "its agent answers"},
	{OpStart, states(starting), stopped, "its driver could not start it; its files are kept"},
	{OpStop, states(running, pausedS), stopping, "its agent is let go; its driver ends its processes"},
	{OpStop, states(stopping), stopped, "its processes ended; its files are kept and its clock held"},
	{OpPause, states(running), pausedS, "recorded before its driver freezes it"},
	{OpPause, states(pausedS), running, "its driver could not freeze it"},
	{OpResume, states(pausedS), running, "recorded after its driver thawed it"},
	{OpRestore, states(running, pausedS), stopping, "its processes end before its files are replaced"},
	{OpRestore, states(stopping), running, "it runs again on the snapshot's files"},
	{OpDestroy, states(creating, running, pausedS, stopped, failed), destroying, "its driver removes its processes and files"},
	{OpDestroy, states(destroying), destroyed, "nothing of it is left but its record and events"},
	{OpFail, states(creating, starting, running, pausedS, stopping, destroying), failed, "a driver call failed or its agent was lost"},
	{OpLose, states(running, pausedS), lostS, "its node stopped heartbeating; it is left as it is"},
	{OpRecover, states(starting, running, stopping, lostS), running, "after a restart (or its node's return) its agent answers again"},
	{OpRecover, states(starting, running, stopping, pausedS, lostS), stopped, "after a restart its agent is gone, or it could not be frozen again"},
	{OpRecover, states(lostS), pausedS, "its node, cut off from the store, returned with it frozen"},
	{OpAbandon, states(creating, starting, running, pausedS, stopping, stopped, destroying, lostS), failed, "its node was removed for good: nothing of it can be reached"},
	{OpRecover, states(destroying), failed, "a restart cut its destroy short; the destroy is done again"},
	{OpAdopt, states(running, pausedS), lostS, "its node was lost and another node, whose driver reaches it too, takes it over and re-attaches it"},
}

// edgeOf is the edge of op to state to.
func edgeOf(op Op, to api.SandboxState) (edge, bool) {
	for _, e := range table {
		if e.op == op && e.to == to {
			return e, true
		}
	}
	return edge{}, false
}

// transition moves sandbox id by op to state to, if the table has that
// edge and the sandbox is in one of the states it leaves from, and lets fn
// change the rest of the record on the way (store.Transition). Any other
// sandbox state is a 409 sandbox_state_conflict; an edge the table lacks
// is a 500, a mistake of this package that its tests find.
func (s *Service) transition(ctx context.Context, id string, op Op, to api.SandboxState, fn func(*store.Sandbox)) (*store.Sandbox, error) {
	e, ok := edgeOf(op, to)
	if !ok {
		return nil, fmt.Errorf("sandbox %s: the state table has no edge %s to %s", id, op, to)
	}
	rec, err := store.Transition(ctx, s.store, id, e.from, to, fn)
	return s.updated(id, rec, err)
}

// need is an operation that needs a sandbox in one of the states in and
// leaves it there; code is its refusal's.
type need struct {
	op   Op
	in   []api.SandboxState
	code string
	what string
}

// needs are the operations that need a state and change none.
var needs = []need{
	{OpSnapshot, states(running, pausedS, stopped), "sandbox_not_ready", "its files are copied; a running one is frozen meanwhile"},
	{OpTimeout, states(running, pausedS, stopped), "sandbox_state_conflict", "its lifetime is set anew"},
	{OpNetwork, states(creating, starting, running, pausedS, stopping, stopped, failed), "sandbox_state_conflict", "its egress policy changes; a running one's at once"},
	{OpKeepalive, states(creating, starting, running, pausedS, stopping, stopped, destroying), "sandbox_not_live", "idle actions are kept off it"},
}

// require returns nil when op may act on sb as it is, else the 409 that
// says which states op needs.
func require(op Op, sb *store.Sandbox) error {
	i := slices.IndexFunc(needs, func(n need) bool { return n.op == op })
	if i < 0 {
		return fmt.Errorf("sandbox %s: the state table has no operation %s", sb.ID, op)
	}
	h := needs[i]
	if slices.Contains(h.in, sb.State) {
		return nil
	}
	names := make([]string, len(h.in))
	for i, st := range h.in {
		names[i] = string(st)
	}
	return errdefs.Conflict(h.code, "sandbox %s is %s; %s needs it %s", sb.ID, sb.State, op, strings.Join(names, ", "))
}
