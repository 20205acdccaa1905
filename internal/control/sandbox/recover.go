package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// owns says whether this server looks after rec: it is this node's (or
// was made before nodes were recorded) and its driver is loaded here.
// Another node's sandboxes and those of a driver not loaded are left
// alone.
func (s *Service) owns(rec *store.Sandbox) bool {
	if rec.Node != "" && rec.Node != s.cfg.Node {
		return false
	}
	_, ok := s.drivers.Get(rec.Driver)
	return ok
}

// recoverAtOnce is how many sandboxes Recover settles at once. Each
// waits mostly on its agent's answer, its driver and the store, so one at
// a time left the CPUs idle: a restart with thousands alive took as many
// round trips, one after another, before the API served.
const recoverAtOnce = 32

// Recover runs once at start-up, before the API serves: it re-attaches to
// the sandboxes the store says are running, settles the ones a crash
// caught in a transitional state, and sweeps what the drivers find that
// the store does not know. Sandboxes are settled recoverAtOnce at a time,
// each under its own lock. A sandbox whose agent's process the driver
// finds alive is re-attached on that word; its agent is asked for its
// health afterwards, beside the API (checkRecovered): with thousands
// alive, waiting for every agent's answer kept the API from serving for
// as many round trips.
func (s *Service) Recover(ctx context.Context) error {
	ctx = tenancy.System(ctx)
	recs, err := s.store.AllSandboxes(ctx, Recoverable...)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	var mine []*store.Sandbox
	for _, rec := range recs {
		if s.owns(rec) {
			mine = append(mine, rec)
		} else if _, ok := s.drivers.Get(rec.Driver); !ok {
			s.log.Warn("sandbox unavailable: its driver is not loaded", logattr.Sandbox(rec.ID), "driver", rec.Driver)
		}
	}
	var (
		mu       sync.Mutex
		attached []reattached
	)
	atOnce(mine, nil, func(rec *store.Sandbox) {
		if r, ok := s.recoverOne(ctx, rec); ok {
			mu.Lock()
			attached = append(attached, r)
			mu.Unlock()
		}
	})
	s.checkRecovered(attached)
	return s.Sweep(ctx)
}

// reattached is a sandbox Recover re-attached and the client of its agent.
type reattached struct {
	rec   *store.Sandbox
	agent *agentclient.Client
}

// checkRecovered asks each re-attached agent for its health, recoverAtOnce
// at a time, on a goroutine of the service's (Close ends it). One that
// answers has its processes followed again (reattachProcesses); one that
// does not goes to the agent check (agentcheck.go), which fails its
// sandbox only if its process is gone or it stays silent.
func (s *Service) checkRecovered(attached []reattached) {
	if len(attached) == 0 {
		return
	}
	w := &s.procs
	w.start()
	w.wg.Go(func() {
		atOnce(attached, w.ctx.Done(), func(r reattached) { s.checkReattached(w.ctx, r) })
	})
}

// atOnce calls fn on each of items, recoverAtOnce at a time, and returns
// when every call has; once stop is closed (a nil stop never is), items
// not yet handed out are left.
func atOnce[T any](items []T, stop <-chan struct{}, fn func(T)) {
	next := make(chan T)
	var wg sync.WaitGroup
	for range min(recoverAtOnce, len(items)) {
		wg.Go(func() {
			for it := range next {
				fn(it)
			}
		})
	}
	defer wg.Wait()
	defer close(next)
	for _, it := range items {
		select {
		case next <- it:
		case <-stop:
			return
		}
	}
}

// checkReattached asks one re-attached agent for its health, then
// follows its event feed, whose replay brings the exits no server heard.
// Both wait their turn here: started for every sandbox at once, the feeds
// woke 2,000 agents in the same second (3,696 of their threads runnable).
func (s *Service) checkReattached(ctx context.Context, r reattached) {
	hctx, cancel := context.WithTimeout(ctx, agentHealthTimeout)
	_, err := r.agent.Health(hctx)
	cancel()
	if lv := s.lookup(r.rec.ID); lv != nil && r.agent.HasEvents() {
		s.followFeed(lv, r.rec, r.agent, true)
	}
	switch {
	case err == nil:
		s.log.Info("sandbox recovered", logattr.Sandbox(r.rec.ID))
		s.reattachProcesses(ctx, r.rec, r.agent)
	case ctx.Err() == nil:
		// Its process lives: a slow answer on a busy host (a start with
		// thousands alive) is not a dead agent.
		s.log.Warn("sandbox re-attached; its agent has not answered yet", logattr.Sandbox(r.rec.ID), "err", err)
		s.reportLost(r.rec.ID)
	}
}

// recoverOne settles one sandbox rec, under its lock, by the state its
// record was left in; it returns the sandbox and its agent's client when
// it re-attached it.
func (s *Service) recoverOne(ctx context.Context, rec *store.Sandbox) (reattached, bool) {
	unlock := s.locks.Lock(rec.ID)
	defer unlock()
	switch rec.State {
	case api.StateCreating:
		s.failOrphan(ctx, rec, "the control plane restarted while the sandbox was being created")
	case api.StateDestroying:
		tctx, cancel := s.teardownContext(ctx)
		defer cancel()
		if err := s.destroyAfterCrash(tctx, rec); err != nil {
			s.log.Warn("finish an interrupted destroy", logattr.Sandbox(rec.ID), "err", err)
		}
	case api.StatePaused:
		s.recoverPaused(ctx, rec)
	case api.StateUnavailable:
		if rec.PausedAt != nil {
			// Paused when its node was lost: it stays paused.
			s.recoverPaused(ctx, rec)
			break
		}
		return s.reattach(ctx, rec)
	default: // starting, running, stopping: whatever the agent is doing now decides
		return s.reattach(ctx, rec)
	}
	return reattached{}, false
}

// destroyAfterCrash finishes a destroy a crash interrupted.
func (s *Service) destroyAfterCrash(ctx context.Context, rec *store.Sandbox) error {
	rec, err := s.transition(ctx, rec.ID, OpRecover, api.StateFailed, func(sb *store.Sandbox) {
		sb.Error = "the control plane restarted while the sandbox was being destroyed"
	})
	if err != nil {
		return err
	}
	return s.destroy(ctx, rec)
}

// reattach re-attaches rec when its driver finds its agent's process
// alive, and stops it otherwise.
func (s *Service) reattach(ctx context.Context, rec *store.Sandbox) (reattached, bool) {
	d, err := s.drivers.of(rec)
	if err != nil {
		return reattached{}, false
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		s.failOrphan(ctx, rec, "its driver handle could not be read")
		return reattached{}, false
	}
	st, err := d.Recover(ctx, h)
	if err == nil && st.State == driver.Running {
		// A crash while a snapshot copied the sandbox's files left it
		// frozen (the copy freezes it) under a record that is not paused:
		// thaw it, or its agent never answers and it is stopped below.
		if _, p, perr := s.drivers.pauser(rec); perr == nil {
			if terr := p.Resume(ctx, h); terr != nil {
				s.log.Warn("thaw a recovered sandbox", logattr.Sandbox(rec.ID), "err", terr)
			}
		}
		if rec.State != api.StateRunning || rec.Node != s.cfg.Node {
			was := rec.State
			var moved *store.Sandbox
			if moved, err = s.transition(ctx, rec.ID, OpRecover, api.StateRunning, func(sb *store.Sandbox) {
				sb.Node = s.cfg.Node
				if was == api.StateUnavailable {
					sb.Error, sb.PausedAt = "", nil // thawed above, if it was frozen
				}
			}); err == nil {
				rec = moved
				if was == api.StateUnavailable {
					s.emitAvailable(ctx, rec, "re-attached it")
				}
			}
		}
		if err == nil {
			return reattached{rec, s.attach(ctx, rec, d, h)}, true
		}
	}
	s.detach(rec.ID)
	reason := "its agent was not running after the control plane restarted"
	if err != nil {
		reason = fmt.Sprintf("%s (%s)", reason, err)
	}
	s.lost(ctx, rec, d, h, reason)
	return reattached{}, false
}

// lost marks a sandbox whose agent recovery could not reach stopped, its
// clock held as a stop holds it, and stops what is left of it.
func (s *Service) lost(ctx context.Context, rec *store.Sandbox, d driver.Driver, h driver.Handle, reason string) {
	_, uerr := s.transition(ctx, rec.ID, OpRecover, api.StateStopped, func(sb *store.Sandbox) {
		sb.Error, sb.Node, sb.PausedAt = reason, s.cfg.Node, nil
		holdClock(sb, time.Now())
	})
	if uerr != nil {
		s.log.Error("mark sandbox stopped", logattr.Sandbox(rec.ID), "err", uerr)
	} else {
		s.emit(ctx, rec, api.EventSandboxStopped, "sandbox stopped: "+reason, map[string]any{"reason": reason})
	}
	// Whatever is left of its processes goes; its files stay for Start.
	_ = d.Stop(ctx, h)
	s.log.Warn("sandbox not recovered", logattr.Sandbox(rec.ID), "reason", reason)
}

func (s *Service) failOrphan(ctx context.Context, rec *store.Sandbox, reason string) {
	if d, err := s.drivers.of(rec); err == nil {
		if h, err := s.seals.decodeHandle(rec); err == nil {
			tctx, cancel := s.teardownContext(ctx)
			_ = d.Destroy(tctx, h)
			cancel()
		}
	}
	rec, err := s.transition(ctx, rec.ID, OpFail, api.StateFailed, func(sb *store.Sandbox) {
		sb.Error, sb.Handle = reason, nil
	})
	if err != nil {
		s.log.Error("mark sandbox failed", logattr.Sandbox(rec.ID), "err", err)
	} else {
		s.emitFailed(ctx, rec, reason)
	}
}

// Sweep removes what each driver made that no live sandbox claims.
func (s *Service) Sweep(ctx context.Context) error {
	live, err := s.store.AllSandboxes(ctx, api.StateCreating, api.StateStarting, api.StateRunning, api.StatePaused, api.StateStopping,
		api.StateStopped, api.StateDestroying, api.StateUnavailable)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	listed := make(map[string]bool, len(live))
	for _, r := range live {
		listed[r.ID] = true
	}
	// A sandbox created since the listing has a record by the time its
	// driver has anything of it (create writes the record first), so an
	// id the listing lacks is looked up again before it counts as an
	// orphan; a lookup that fails keeps it.
	known := func(id string) bool {
		if listed[id] {
			return true
		}
		rec, err := s.store.GetSandbox(ctx, id)
		if errors.Is(err, errdefs.ErrNotFound) {
			return false
		}
		return err != nil || (rec.State != api.StateDestroyed && rec.State != api.StateFailed)
	}
	for _, d := range s.drivers.Loaded() {
		sw, ok := d.(driver.Sweeper)
		if !ok {
			continue
		}
		removed, err := sw.Sweep(ctx, known)
		for _, id := range removed {
			s.log.Info("swept orphaned sandbox", logattr.Sandbox(id), "driver", d.Name())
		}
		if err != nil {
			return fmt.Errorf("sweep %s: %w", d.Name(), err)
		}
	}
	return s.sweepSnapshots(ctx)
}

// Owned returns the sandboxes in one of states (any when none) that this
// server looks after: its own, of a driver it loaded. The lifecycle
// policies act on these.
func (s *Service) Owned(ctx context.Context, states ...api.SandboxState) ([]*store.Sandbox, error) {
	recs, err := s.store.AllSandboxes(ctx, states...)
	if err != nil {
		return nil, err
	}
	out := recs[:0]
	for _, rec := range recs {
		if s.owns(rec) {
			out = append(out, rec)
		}
	}
	return out, nil
}

// OwnedSince returns the records written after revision rev
// (store.Sandbox.Rev), in any state, of the sandboxes this server looks
// after, in the order they were written.
func (s *Service) OwnedSince(ctx context.Context, rev int64) ([]*store.Sandbox, error) {
	recs, err := s.store.SandboxesSince(ctx, rev)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(recs, func(rec *store.Sandbox) bool { return !s.owns(rec) }), nil
}

// Record is sandbox id's record, of any tenant's (the policies act as
// the system).
func (s *Service) Record(ctx context.Context, id string) (*store.Sandbox, error) {
	return s.store.GetSandbox(ctx, id)
}

// Expire does what sandbox id's expiry asks (its on_expiry: destroy, stop
// or pause), under its lock, if it is still there and expired at now once
// the lock is held.
func (s *Service) Expire(ctx context.Context, id string, now time.Time) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.ExpiresAt == nil || rec.ExpiresAt.After(now) || (rec.State != api.StateRunning && rec.State != api.StateStopped) {
		return
	}
	s.emitExpired(ctx, rec)
	if rec.OnExpiry == api.OnExpiryPause && rec.State == api.StateRunning {
		// Paused, its clock rests as a stopped one's does.
		_, err := s.pause(ctx, rec, restClock, map[string]any{"reason": ReasonExpiry})
		if err == nil {
			s.log.Info("sandbox expired: paused", logattr.Sandbox(rec.ID), "timeout_s", rec.TimeoutS)
			return
		}
		s.log.Warn("pause expired sandbox; stopping it instead", logattr.Sandbox(rec.ID), "err", err)
		if rec, err = s.store.GetSandbox(ctx, id); err != nil {
			return
		}
	}
	if rec.OnExpiry == api.OnExpiryStop || rec.OnExpiry == api.OnExpiryPause {
		// Stopped, its clock rests: its next start gives it its whole
		// lifetime again.
		if _, err := s.stop(ctx, rec, fmt.Sprintf("sandbox stopped at the end of its timeout of %d s", rec.TimeoutS), restClock,
			map[string]any{"reason": ReasonExpiry}); err != nil {
			s.log.Warn("stop expired sandbox", logattr.Sandbox(rec.ID), "err", err)
			return
		}
		s.log.Info("sandbox expired: stopped", logattr.Sandbox(rec.ID), "timeout_s", rec.TimeoutS)
		return
	}
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	if err := s.destroy(tctx, rec); err != nil {
		s.log.Warn("destroy expired sandbox", logattr.Sandbox(rec.ID), "err", err)
		return
	}
	s.log.Info("sandbox expired", logattr.Sandbox(rec.ID), "timeout_s", rec.TimeoutS)
}
