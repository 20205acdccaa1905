package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// Pause and resume. A paused sandbox's processes, its agent among them,
// are frozen by its driver (driver.Pauser): memory, files and sockets
// are kept and nothing runs. The store says paused before the freeze and
// running only after the thaw, so a crash between the two leaves a
// sandbox the store calls paused, which recovery freezes again. While it
// is paused its clock is held, as a stopped sandbox's is; a call that
// reaches it through the door resumes it first (autoResume).

// Why a sandbox was paused or resumed, in its events' "reason".
const (
	ReasonRequest  = "request"
	ReasonIdle     = "idle"
	ReasonExpiry   = "expiry"
	ReasonPressure = "memory_pressure"
	ReasonAuto     = "auto"
)

// Pause freezes a running sandbox. Pausing a paused sandbox is not an
// error.
func (s *Service) Pause(ctx context.Context, id string) (api.Sandbox, error) {
	return s.lifecycleCall(ctx, id, api.StatePaused, func(rec *store.Sandbox) (api.Sandbox, error) {
		return s.pause(ctx, rec, holdClock, map[string]any{"reason": ReasonRequest})
	})
}

// pause pauses rec under its lock; clock says what becomes of its
// lifetime (holdClock, or restClock at its expiry) and data, with its
// "reason", goes in its event.
func (s *Service) pause(ctx context.Context, rec *store.Sandbox, clock func(*store.Sandbox, time.Time), data map[string]any) (api.Sandbox, error) {
	d, p, err := s.drivers.pauser(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	now := time.Now()
	rec, err = s.transition(tctx, rec.ID, OpPause, api.StatePaused, func(sb *store.Sandbox) {
		clock(sb, now)
		sb.PausedAt = &now
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	// Its calls in flight end (as a 409: the sandbox is paused); its
	// agent is reached again once it is resumed.
	s.suspend(rec.ID)
	if err := p.Pause(tctx, h); err != nil {
		if _, rerr := s.thawed(tctx, rec, OpPause, d, h); rerr != nil {
			s.log.Error("mark sandbox running after a failed pause", logattr.Sandbox(rec.ID), "err", rerr)
		}
		if coded := new(errdefs.Error); errors.As(err, &coded) {
			return api.Sandbox{}, err
		}
		return api.Sandbox{}, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the %s driver could not pause sandbox %s", d.Name(), rec.ID)
	}
	s.emit(tctx, rec, api.EventSandboxPaused, fmt.Sprintf("sandbox paused (%s)", data["reason"]), data)
	return s.toAPI(rec), nil
}

// Resume thaws a paused sandbox. Resuming a running sandbox is not an
// error.
func (s *Service) Resume(ctx context.Context, id string) (api.Sandbox, error) {
	return s.lifecycleCall(ctx, id, api.StateRunning, func(rec *store.Sandbox) (api.Sandbox, error) {
		rec, err := s.resume(ctx, rec, map[string]any{"reason": ReasonRequest})
		if err != nil {
			return api.Sandbox{}, err
		}
		return s.toAPI(rec), nil
	})
}

// resume resumes rec under its lock; data, with its "reason", goes in its
// event.
func (s *Service) resume(ctx context.Context, rec *store.Sandbox, data map[string]any) (*store.Sandbox, error) {
	if rec.State != api.StatePaused {
		return nil, errdefs.Conflict("sandbox_not_paused", "sandbox %s is %s, not paused", rec.ID, rec.State)
	}
	d, p, err := s.drivers.pauser(rec)
	if err != nil {
		return nil, err
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return nil, err
	}
	// It held no CPU while paused: it takes its CPU back as a start
	// takes its limits, and the transition to running takes the room.
	claim, err := s.admission.admitResume(ctx, rec.TenantID, rec.Limits)
	if err != nil {
		return nil, err
	}
	defer claim.Cancel()
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	began := time.Now()
	if err := p.Resume(tctx, h); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the %s driver could not resume sandbox %s", d.Name(), rec.ID)
	}
	var running *store.Sandbox
	if err := claim.Commit(tctx, nil, func() (err error) {
		running, err = s.thawed(tctx, rec, OpResume, d, h)
		return err
	}); err != nil {
		// The store still says paused: freeze it again to match.
		if perr := p.Pause(tctx, h); perr != nil {
			s.log.Error("freeze a sandbox the store still calls paused", logattr.Sandbox(rec.ID), "err", perr)
		}
		return nil, err
	}
	rec = running
	data["resume_ms"] = float64(time.Since(began).Microseconds()) / 1000
	s.emit(tctx, rec, api.EventSandboxResumed, fmt.Sprintf("sandbox resumed (%s)", data["reason"]), data)
	return rec, nil
}

// thawed records that a paused sandbox runs again (its clock too), by op
// (a resume, or a pause that failed), and follows its agent again.
func (s *Service) thawed(ctx context.Context, rec *store.Sandbox, op Op, d driver.Driver, h driver.Handle) (*store.Sandbox, error) {
	rec, err := s.transition(ctx, rec.ID, op, api.StateRunning, func(sb *store.Sandbox) {
		sb.PausedAt = nil
		runClock(sb, time.Now())
	})
	if err != nil {
		return nil, err
	}
	s.attach(ctx, rec, d, h)
	return rec, nil
}

// autoResume resumes the paused sandbox id that a call (op) reached, and
// returns its record as the call should see it.
func (s *Service) autoResume(ctx context.Context, id, op string) (*store.Sandbox, error) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StatePaused {
		return rec, err
	}
	return s.resume(ctx, rec, map[string]any{"reason": ReasonAuto, "op": op})
}

// recoverPaused settles a sandbox the store calls paused after a restart,
// or unavailable while it was paused (its node was lost, and is back):
// frozen again if its agent lives (a crash may have come between a thaw
// and its record) and paused, else stopped.
func (s *Service) recoverPaused(ctx context.Context, rec *store.Sandbox) {
	d, p, err := s.drivers.pauser(rec)
	if err != nil {
		return
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		s.failOrphan(ctx, rec, "its driver handle could not be read")
		return
	}
	st, err := d.Recover(ctx, h)
	if err == nil && st.State == driver.Running {
		if err = p.Pause(ctx, h); err == nil && rec.State == api.StateUnavailable {
			err = s.returnPaused(ctx, rec)
		}
		if err == nil {
			s.keep(rec.ID) // live, suspended: its metrics are sampled
			s.log.Info("paused sandbox recovered", logattr.Sandbox(rec.ID))
			return
		}
	}
	reason := "its agent was not running after the control plane restarted"
	if err != nil {
		reason = fmt.Sprintf("it could not be paused again after the control plane restarted (%s)", err)
	}
	s.lost(ctx, rec, d, h, reason)
}

// returnPaused moves rec, marked unavailable while it was paused and now
// frozen again here, back to paused: its node returned.
func (s *Service) returnPaused(ctx context.Context, rec *store.Sandbox) error {
	rec, err := s.transition(ctx, rec.ID, OpRecover, api.StatePaused, func(sb *store.Sandbox) {
		sb.Error, sb.Node = "", s.cfg.Node
	})
	if err != nil {
		return err
	}
	s.emitAvailable(ctx, rec, "re-attached it, paused")
	return nil
}
