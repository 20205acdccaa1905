package sandbox

import (
	"context"
	"fmt"
	"slices"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// Adopt takes over the sandboxes in recs of lost node from whose driver
// runs them outside their node (driver.Adopter: a cluster's Pods), is
// loaded here and finds them running (reaches), and returns the others,
// which stay from's. Each is moved to this node in the store first, only
// if it is still from's and in a state a restart settles (Recoverable),
// so that no other node takes it too; a running or paused one is
// unavailable until it is re-attached. Its driver then marks what it
// made as this node's, and it is settled as a restart settles it:
// re-attached (running) if its agent answers, else stopped; a create the
// lost node left unfinished fails, a destroy is finished. It returns how
// many it moved.
func (s *Service) Adopt(ctx context.Context, from string, recs []*store.Sandbox) (int, []*store.Sandbox) {
	if from == s.cfg.Node {
		return 0, recs
	}
	var rest []*store.Sandbox
	var attached []reattached
	n := 0
	for _, rec := range recs {
		if ctx.Err() != nil {
			rest = append(rest, rec)
			continue
		}
		d, err := s.drivers.of(rec)
		a, ok := d.(driver.Adopter)
		if err != nil || !ok || rec.Node != from || !s.reaches(ctx, d, rec) {
			rest = append(rest, rec)
			continue
		}
		moved, ok := s.claim(ctx, rec.ID, from, a)
		if !ok {
			continue
		}
		n++
		if r, ok := s.recoverOne(ctx, moved); ok {
			attached = append(attached, r)
		}
	}
	s.checkRecovered(attached)
	return n, rest
}

// reaches says whether this node's driver d finds sandbox rec running,
// or rec is in a state that needs nothing running (a create or destroy
// left unfinished): a node whose driver does not see another's sandbox
// (one configured for another namespace, say) leaves it to a node that
// does, rather than take it over and find it gone.
func (s *Service) reaches(ctx context.Context, d driver.Driver, rec *store.Sandbox) bool {
	if rec.State == api.StateCreating || rec.State == api.StateDestroying {
		return true
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return false
	}
	st, err := d.Status(ctx, h)
	return err == nil && st.State == driver.Running
}

// Recoverable are the states Recover settles after a restart, and so
// those Adopt takes a lost node's sandbox over in.
var Recoverable = []api.SandboxState{api.StateCreating, api.StateStarting, api.StateRunning, api.StatePaused,
	api.StateStopping, api.StateDestroying, api.StateUnavailable}

// claim moves sandbox id from node from to this one, under its lock (a
// running or paused one unavailable until it is re-attached: OpAdopt),
// and has its driver mark it this node's; it returns the record as
// moved.
func (s *Service) claim(ctx context.Context, id, from string, a driver.Adopter) (*store.Sandbox, bool) {
	unlock := s.locks.Lock(id)
	defer unlock()
	e, _ := edgeOf(OpAdopt, api.StateUnavailable)
	why := fmt.Sprintf("its node %s stopped heartbeating; node %s takes it over", from, s.cfg.Node)
	rec, err := s.store.UpdateSandbox(ctx, id, func(sb *store.Sandbox) error {
		if sb.Node != from {
			return errdefs.Conflict("sandbox_moved", "sandbox %s is node %s's, not %s's", id, sb.Node, from)
		}
		if !slices.Contains(Recoverable, sb.State) {
			return store.StateConflict(sb, Recoverable)
		}
		if slices.Contains(e.from, sb.State) {
			sb.State, sb.Error = api.StateUnavailable, why
		}
		sb.Node = s.cfg.Node
		return nil
	})
	if rec, err = s.updated(id, rec, err); err != nil {
		if !errdefs.HasCode(err, "sandbox_moved") && !errdefs.HasCode(err, "sandbox_state_conflict") {
			s.log.Warn("take over a lost node's sandbox", logattr.Sandbox(id), "node", from, "err", err)
		}
		return nil, false
	}
	if rec.State == api.StateUnavailable {
		s.emit(ctx, rec, api.EventSandboxUnavailable, "sandbox unavailable: "+why, map[string]any{"node": from, "adopted_by": s.cfg.Node})
	}
	h, err := s.seals.decodeHandle(rec)
	if err == nil {
		err = a.Adopt(ctx, h)
	}
	if err != nil {
		// It runs where it ran: the labels only say who looks after it.
		s.log.Warn("mark a taken-over sandbox this node's in its driver", logattr.Sandbox(id), "err", err)
	}
	s.log.Info("sandbox taken over from a lost node", logattr.Sandbox(id), "node", from, "state", rec.State)
	return rec, true
}

// letGoMoved lets go of the sandboxes live here whose records another
// node took over (Adopt) while this one was cut off from the store.
func (s *Service) letGoMoved(ctx context.Context) error {
	owned, err := s.Owned(ctx, Recoverable...)
	if err != nil {
		return err
	}
	ours := make(map[string]bool, len(owned))
	for _, rec := range owned {
		ours[rec.ID] = true
	}
	s.mu.Lock()
	var gone []string
	for id := range s.lives {
		if !ours[id] {
			gone = append(gone, id)
		}
	}
	s.mu.Unlock()
	for _, id := range gone {
		unlock := s.locks.Lock(id)
		if rec, err := s.store.GetSandbox(ctx, id); err == nil && rec.Node != s.cfg.Node {
			s.detach(id)
			s.log.Info("sandbox let go: another node took it over while this one was cut off", logattr.Sandbox(id), "node", rec.Node)
		}
		unlock()
	}
	return nil
}
