package sandbox

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/store"
)

// What the service does for the fleet (internal/control/nodes): the
// load this node reports, the creates a draining node refuses, the
// sandboxes of a lost node marked unavailable, those of a node removed
// for good failed, and a drain's stops.

// ReasonDrain is the "reason" of the stop of a sandbox its node's drain
// reached the deadline of.
const ReasonDrain = "node_drained"

// SetDraining says whether this node drains: while it does, a create on
// it is 503 node_draining.
func (s *Service) SetDraining(on bool) { s.draining.Store(on) }

// refuseDraining is a create's answer on a draining node.
func (s *Service) refuseDraining() error {
	if !s.draining.Load() {
		return nil
	}
	return errdefs.New(errdefs.ErrUnavailable, "node_draining",
		"node %s is draining and takes no new sandboxes: create it through another node", s.cfg.Node)
}

// Unavailable is the answer to a call that needs sandbox rec running
// while its node is lost: 503 sandbox_unavailable.
func Unavailable(rec *store.Sandbox) error {
	return errdefs.New(errdefs.ErrUnavailable, "sandbox_unavailable",
		"sandbox %s is unavailable: its node %s stopped heartbeating; it comes back when the node does", rec.ID, rec.Node)
}

// NodeLoad is this node's capacity and load, as it heartbeats them: the
// capacity its admission bounds (store.NodeLoad counts 0 as no bound),
// the memory its sandboxes' limits commit and the sandboxes live here.
func (s *Service) NodeLoad(ctx context.Context) (store.NodeLoad, error) {
	u, err := s.store.NodeUsage(ctx, s.cfg.Node)
	if err != nil {
		return store.NodeLoad{}, err
	}
	s.mu.Lock()
	running := len(s.lives)
	s.mu.Unlock()
	c := s.cfg.Capacity
	return store.NodeLoad{CPUs: c.CPU, MemoryBytes: int64(c.MemoryMB) << 20,
		CommittedMemoryBytes: int64(u.MemoryMB) << 20, Running: running}, nil
}

// MarkUnavailable marks sandbox id unavailable, under its lock, if it is
// still node's and running or paused: node is lost (another node's
// lease holder calls this; its driver is not touched, for the sandbox
// may still run there). It reports whether it did.
func (s *Service) MarkUnavailable(ctx context.Context, id, node string) bool {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.Node != node || node == s.cfg.Node || (rec.State != api.StateRunning && rec.State != api.StatePaused) {
		return false
	}
	why := fmt.Sprintf("its node %s stopped heartbeating", node)
	rec, err = s.transition(ctx, id, OpLose, api.StateUnavailable, func(sb *store.Sandbox) { sb.Error = why })
	if err != nil {
		s.log.Warn("mark a lost node's sandbox unavailable", logattr.Sandbox(id), "node", node, "err", err)
		return false
	}
	s.emit(ctx, rec, api.EventSandboxUnavailable, "sandbox unavailable: "+why, map[string]any{"node": node})
	return true
}

// Reclaim takes back this node's sandboxes another node marked
// unavailable while this one was cut off from the store (its heartbeats
// failed for longer than store.LostAfter) and ran on meanwhile: one still
// live here goes back to the state it was in (running, or paused if it
// was frozen), one not is recovered as a restart recovers it
// (re-attached if its agent lives, else stopped). Each under its lock.
// Those another node took over meanwhile (Adopt) are let go.
func (s *Service) Reclaim(ctx context.Context) error {
	if err := s.letGoMoved(ctx); err != nil {
		return fmt.Errorf("reclaim: %w", err)
	}
	recs, err := s.Owned(ctx, api.StateUnavailable)
	if err != nil {
		return fmt.Errorf("reclaim: %w", err)
	}
	var attached []reattached
	for _, rec := range recs {
		if ctx.Err() != nil {
			break
		}
		if s.reclaimLive(ctx, rec.ID) {
			continue
		}
		if r, ok := s.recoverOne(ctx, rec); ok {
			attached = append(attached, r)
		}
	}
	s.checkRecovered(attached)
	return nil
}

// reclaimLive puts sandbox id back in the state it was in before it was
// marked unavailable, if it is live here and still unavailable once its
// lock is held, and reports whether it was live here.
func (s *Service) reclaimLive(ctx context.Context, id string) bool {
	unlock := s.locks.Lock(id)
	defer unlock()
	if s.lookup(id) == nil {
		return false
	}
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StateUnavailable {
		return true
	}
	to := api.StateRunning
	if rec.PausedAt != nil {
		to = api.StatePaused
	}
	if rec, err = s.transition(ctx, id, OpRecover, to, func(sb *store.Sandbox) { sb.Error = "" }); err != nil {
		s.log.Warn("reclaim a sandbox marked unavailable", logattr.Sandbox(id), "err", err)
		return true
	}
	s.emitAvailable(ctx, rec, "reached the store again")
	s.log.Info("sandbox reclaimed after this node was cut off from the store", logattr.Sandbox(id))
	return true
}

// StopForDrain stops sandbox id, under its lock, if it still runs (or is
// paused) here once the lock is held: its node's drain reached its
// deadline. Its files are kept.
func (s *Service) StopForDrain(ctx context.Context, id string) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || !s.owns(rec) || (rec.State != api.StateRunning && rec.State != api.StatePaused) {
		return
	}
	if _, err := s.stop(ctx, rec, "sandbox stopped: its node "+s.cfg.Node+" was drained", holdClock,
		map[string]any{"reason": ReasonDrain}); err != nil {
		s.log.Warn("stop a sandbox for its node's drain", logattr.Sandbox(id), "err", err)
		return
	}
	s.log.Info("sandbox stopped for its node's drain", logattr.Sandbox(id), logattr.Tenant(rec.TenantID))
}

// Abandon fails every sandbox of node that is neither destroyed nor
// failed, each under its lock: node was removed for good
// (nodes.Node.Remove), so nothing of them can be reached again. Each
// keeps its record and events but no longer counts against its
// tenant's quotas; it is left with no node and no driver handle, so that
// any node destroys its record (its files and processes went with its
// node's machine; should that node ever start again, its sweep removes
// what is left there). It returns how many it failed.
func (s *Service) Abandon(ctx context.Context, node string) (int, error) {
	if node == "" || node == s.cfg.Node {
		return 0, errdefs.Invalid("node_not_removable", "node %q cannot abandon its own sandboxes", node)
	}
	recs, err := s.store.AllSandboxes(ctx, abandonable...)
	if err != nil {
		return 0, fmt.Errorf("abandon node %s: %w", node, err)
	}
	why := fmt.Sprintf("its node %s was removed", node)
	n := 0
	for _, rec := range recs {
		if rec.Node != node {
			continue
		}
		if err := s.abandon(ctx, rec.ID, node, why); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// abandonable are the states OpAbandon leaves from.
var abandonable = func() []api.SandboxState {
	e, _ := edgeOf(OpAbandon, failed)
	return e.from
}()

// abandon fails sandbox id of node for Abandon, if it is still node's.
func (s *Service) abandon(ctx context.Context, id, node, why string) error {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.Node != node {
		return nil
	}
	rec, err = s.transition(ctx, id, OpAbandon, api.StateFailed, func(sb *store.Sandbox) {
		sb.Error, sb.Node, sb.Handle = why, "", nil
	})
	if errdefs.HasCode(err, "sandbox_state_conflict") {
		return nil // destroyed or failed meanwhile
	}
	if err != nil {
		return fmt.Errorf("abandon sandbox %s: %w", id, err)
	}
	s.emitFailed(ctx, rec, why)
	return nil
}
