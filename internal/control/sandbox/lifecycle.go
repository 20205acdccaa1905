package sandbox

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// The lifecycle calls. Each holds the sandbox's lock from its first read
// to its last write, so calls on one sandbox take turns, and moves the
// sandbox through a transitional state (starting, stopping, destroying)
// with store updates that name the state they expect. A call waits for
// one already under way on the same sandbox, then acts on the state that
// call left.

// Destroy removes a sandbox's processes and files and marks it destroyed.
// It runs to the end on its own deadline even when ctx is cancelled.
// Destroying a destroyed sandbox is not an error.
func (s *Service) Destroy(ctx context.Context, id string) error {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return err
	}
	if rec.State == api.StateDestroyed {
		return nil
	}
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	return s.destroy(tctx, rec)
}

// destroy runs under the sandbox's lock, on a teardown context.
func (s *Service) destroy(ctx context.Context, rec *store.Sandbox) error {
	d, err := s.drivers.of(rec)
	if err != nil {
		return err
	}
	rec, err = s.transition(ctx, rec.ID, OpDestroy, api.StateDestroying, nil)
	if err != nil {
		return err
	}
	s.detach(rec.ID)
	if h, err := s.seals.decodeHandle(rec); err == nil {
		if err := d.Destroy(ctx, h); err != nil {
			s.fail(ctx, rec.ID, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "destroy failed; destroy it again, or the sweeper will"))
			return errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the %s driver could not destroy sandbox %s", d.Name(), rec.ID)
		}
	}
	rec, err = s.transition(ctx, rec.ID, OpDestroy, api.StateDestroyed, func(sb *store.Sandbox) {
		sb.Handle, sb.ExpiresAt, sb.PausedAt = nil, nil, nil
	})
	if err != nil {
		return err
	}
	s.log.Info("sandbox destroyed", logattr.Sandbox(rec.ID), logattr.Tenant(rec.TenantID))
	s.emit(ctx, rec, api.EventSandboxDestroyed, "sandbox destroyed", nil)
	return nil
}

// Stop ends a running sandbox's processes and keeps its files. Stopping a
// stopped sandbox is not an error.
func (s *Service) Stop(ctx context.Context, id string) (api.Sandbox, error) {
	return s.lifecycleCall(ctx, id, api.StateStopped, func(rec *store.Sandbox) (api.Sandbox, error) {
		return s.stop(ctx, rec, "sandbox stopped", holdClock, map[string]any{"reason": ReasonRequest})
	})
}

// lifecycleCall runs do on the caller's sandbox id under its lock, unless
// the sandbox is in state done already: a call that finds its work done
// is not an error.
func (s *Service) lifecycleCall(ctx context.Context, id string, done api.SandboxState, do func(*store.Sandbox) (api.Sandbox, error)) (api.Sandbox, error) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Sandbox{}, err
	}
	if rec.State == done {
		return s.toAPI(rec), nil
	}
	return do(rec)
}

// stop stops rec under its lock; msg and data (its "reason") are its
// event's, and clock says what becomes of its lifetime (holdClock, or
// restClock at its expiry).
func (s *Service) stop(ctx context.Context, rec *store.Sandbox, msg string, clock func(*store.Sandbox, time.Time), data map[string]any) (api.Sandbox, error) {
	id := rec.ID
	d, err := s.drivers.startStop(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	if rec, err = s.takeDown(tctx, rec, d, OpStop, func() error { return d.Stop(tctx, h) }); err != nil {
		return api.Sandbox{}, err
	}
	rec, err = s.transition(tctx, id, OpStop, api.StateStopped, func(sb *store.Sandbox) {
		clock(sb, time.Now())
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	s.emit(tctx, rec, api.EventSandboxStopped, msg, data)
	return s.toAPI(rec), nil
}

// takeDown moves a running or paused sandbox to stopping by op (a stop, a
// restore), lets go of its agent and runs end, the driver's call that
// ends its processes; when end fails, so does the sandbox. ctx outlives
// the request.
func (s *Service) takeDown(ctx context.Context, rec *store.Sandbox, d driver.Driver, op Op, end func() error) (*store.Sandbox, error) {
	rec, err := s.transition(ctx, rec.ID, op, api.StateStopping, func(sb *store.Sandbox) {
		sb.PausedAt = nil
	})
	if err != nil {
		return nil, err
	}
	s.detach(rec.ID)
	if err := end(); err != nil {
		err = errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the %s driver could not %s sandbox %s", d.Name(), op, rec.ID)
		s.fail(ctx, rec.ID, err)
		return nil, err
	}
	return rec, nil
}

// Start starts a stopped sandbox again, once admitted against its
// tenant's quotas and this node's capacity as a create is. Starting a
// running sandbox is not an error; its agent is not started twice. A
// paused sandbox is resumed.
func (s *Service) Start(ctx context.Context, id string) (api.Sandbox, error) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Sandbox{}, err
	}
	switch rec.State {
	case api.StateRunning:
		return s.toAPI(rec), nil
	case api.StatePaused:
		if rec, err = s.resume(ctx, rec, map[string]any{"reason": ReasonRequest, "op": "start"}); err != nil {
			return api.Sandbox{}, err
		}
		return s.toAPI(rec), nil
	}
	d, err := s.drivers.startStop(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	h, err := s.seals.decodeHandle(rec)
	if err != nil {
		return api.Sandbox{}, err
	}
	// A start is admitted as a create is; the transition takes the room.
	claim, err := s.admission.admit(ctx, rec.TenantID, rec.Limits, false, 0)
	if err != nil {
		return api.Sandbox{}, err
	}
	if err := claim.Commit(ctx, nil, func() (err error) {
		rec, err = s.transition(ctx, id, OpStart, api.StateStarting, nil)
		return err
	}); err != nil {
		return api.Sandbox{}, err
	}
	// From here the start finishes, or goes back to stopped, whatever
	// becomes of its request: a caller that went (or the node that
	// forwarded it) must not leave the sandbox starting with its agent
	// running.
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	if h, err = d.Start(tctx, h); err != nil {
		err = errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the %s driver could not start sandbox %s", d.Name(), id)
		// Its files are there still: it is stopped, and may start later.
		_, _, msg := errdefs.Classify(err)
		if _, terr := s.transition(tctx, id, OpStart, api.StateStopped,
			func(sb *store.Sandbox) { sb.Error = msg }); terr != nil {
			s.log.Error("mark sandbox stopped after a failed start", logattr.Sandbox(id), "err", terr)
		}
		return api.Sandbox{}, err
	}
	raw, err := s.seals.encodeHandle(rec, h)
	if err != nil {
		return api.Sandbox{}, err
	}
	rec, err = s.transition(tctx, id, OpStart, api.StateRunning, func(sb *store.Sandbox) {
		sb.Handle, sb.Error = raw, ""
		runClock(sb, time.Now())
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	s.attach(tctx, rec, d, h)
	s.emit(tctx, rec, api.EventSandboxStarted, "sandbox started", nil)
	return s.toAPI(rec), nil
}

// fail marks a sandbox failed with the user-safe part of cause and records
// that in its events. A destroyed sandbox stays destroyed.
func (s *Service) fail(ctx context.Context, id string, cause error) {
	_, _, msg := errdefs.Classify(cause)
	rec, err := s.transition(context.WithoutCancel(ctx), id, OpFail, api.StateFailed, func(sb *store.Sandbox) {
		sb.Error = msg
	})
	if err != nil {
		s.log.Error("mark sandbox failed", logattr.Sandbox(id), "err", err)
	} else {
		s.emitFailed(ctx, rec, msg)
	}
	s.log.Warn("sandbox failed", logattr.Sandbox(id), "err", cause)
}

// teardownContext outlives ctx's cancellation and has its own deadline, so a
// client that hangs up never leaves a half-destroyed sandbox.
func (s *Service) teardownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.TeardownTimeout)
}
