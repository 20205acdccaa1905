package sandbox

import (
	"context"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// Destroy removes a sandbox's processes and files and marks it destroyed.
// It runs to the end on its own deadline even when ctx is cancelled.
// Destroying a destroyed sandbox is not an error.
func (s *Service) Destroy(ctx context.Context, id string) error {
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return err
	}
	switch rec.State {
	case api.StateDestroyed:
		return nil
	case api.StateCreating:
		return errdefs.Conflict("sandbox_busy", "sandbox %s is still being created; retry when it is running or failed", id)
	}
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	return s.destroy(tctx, rec)
}

func (s *Service) destroy(ctx context.Context, rec *store.Sandbox) error {
	s.dropAgent(rec.ID)
	defer s.forgetOOM(rec.ID)
	if h, err := decodeHandle(rec.Handle); err == nil {
		if err := s.driver.Destroy(ctx, h); err != nil {
			s.fail(ctx, rec.ID, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "destroy failed; the sweeper will retry"))
			return errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the driver could not destroy sandbox %s", rec.ID)
		}
	}
	_, err := s.store.UpdateSandbox(ctx, rec.ID, func(sb *store.Sandbox) error {
		sb.State = api.StateDestroyed
		sb.Handle = nil
		sb.ExpiresAt = nil
		return nil
	})
	if err == nil {
		s.log.Info("sandbox destroyed", "sandbox.id", rec.ID, "tenant.id", rec.TenantID)
		s.emit(ctx, rec, api.EventSandboxDestroyed, "sandbox destroyed", nil)
	}
	return err
}

// Stop ends a running sandbox's processes and keeps its files.
func (s *Service) Stop(ctx context.Context, id string) (api.Sandbox, error) {
	if !s.caps.StartStop {
		return api.Sandbox{}, errdefs.New(errdefs.ErrUnsupported, "unsupported", "the %s driver cannot stop and start sandboxes", s.driver.Name())
	}
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Sandbox{}, err
	}
	if rec.State == api.StateStopped {
		return s.toAPI(rec), nil
	}
	if rec.State != api.StateRunning {
		return api.Sandbox{}, errdefs.Conflict("sandbox_not_running", "sandbox %s is %s, not running", id, rec.State)
	}
	h, err := decodeHandle(rec.Handle)
	if err != nil {
		return api.Sandbox{}, err
	}
	s.dropAgent(id)
	tctx, cancel := s.teardownContext(ctx)
	defer cancel()
	if err := s.driver.Stop(tctx, h); err != nil {
		return api.Sandbox{}, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the driver could not stop sandbox %s", id)
	}
	rec, err = s.store.UpdateSandbox(tctx, id, func(sb *store.Sandbox) error {
		sb.State = api.StateStopped
		return nil
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	s.emit(tctx, rec, api.EventSandboxStopped, "sandbox stopped", nil)
	return s.toAPI(rec), nil
}

// Start starts a stopped sandbox again.
func (s *Service) Start(ctx context.Context, id string) (api.Sandbox, error) {
	if !s.caps.StartStop {
		return api.Sandbox{}, errdefs.New(errdefs.ErrUnsupported, "unsupported", "the %s driver cannot stop and start sandboxes", s.driver.Name())
	}
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.Sandbox{}, err
	}
	if rec.State == api.StateRunning {
		return s.toAPI(rec), nil
	}
	if rec.State != api.StateStopped {
		return api.Sandbox{}, errdefs.Conflict("sandbox_not_stopped", "sandbox %s is %s; only a stopped sandbox can start", id, rec.State)
	}
	h, err := decodeHandle(rec.Handle)
	if err != nil {
		return api.Sandbox{}, err
	}
	if h, err = s.driver.Start(ctx, h); err != nil {
		return api.Sandbox{}, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the driver could not start sandbox %s", id)
	}
	raw, err := encodeHandle(h)
	if err != nil {
		return api.Sandbox{}, err
	}
	rec, err = s.store.UpdateSandbox(ctx, id, func(sb *store.Sandbox) error {
		sb.State = api.StateRunning
		sb.Handle = raw
		sb.Error = ""
		return nil
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	s.setAgent(id, h)
	s.startEgress(ctx, rec, h)
	s.emit(ctx, rec, api.EventSandboxStarted, "sandbox started", nil)
	return s.toAPI(rec), nil
}
