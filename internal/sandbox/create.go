package sandbox

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/errdefs"
	"github.com/hutchdev/hutch/internal/ids"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/tenancy"
)

// Create validates req, records the sandbox as creating, has the driver
// build it, and records it as running. When any step fails the driver's
// work is torn down on a context that outlives the request, the record is
// marked failed with the reason, and the error is returned.
func (s *Service) Create(ctx context.Context, req api.CreateSandboxRequest) (_ api.Sandbox, retErr error) {
	p, ok := tenancy.From(ctx)
	if !ok {
		return api.Sandbox{}, errdefs.Forbidden("no_tenant", "no tenant in request")
	}
	set, err := s.settle(req)
	if err != nil {
		return api.Sandbox{}, err
	}
	now := time.Now().UTC()
	rec := &store.Sandbox{
		ID:       ids.New(),
		TenantID: p.TenantID,
		State:    api.StateCreating,
		Template: set.template,
		Driver:   s.driver.Name(),
		Env:      set.env,
		Cwd:      set.cwd,
		Limits:   set.limits,
		TimeoutS: int(set.timeout / time.Second),
		Labels:   set.labels,
		Root:     set.root,
		Network:  set.network,
	}
	if set.timeout > 0 {
		exp := now.Add(set.timeout)
		rec.ExpiresAt = &exp
	}
	if err := s.store.CreateSandbox(ctx, rec); err != nil {
		return api.Sandbox{}, err
	}
	spec := driver.Spec{
		SandboxID:    rec.ID,
		TenantID:     rec.TenantID,
		Template:     rec.Template,
		Env:          s.env(rec.ID, rec.Env),
		Cwd:          rec.Cwd,
		Limits:       rec.Limits,
		Token:        ids.Token(32),
		MaxFileBytes: s.cfg.MaxFileBytes,
		Root:         rec.Root,
	}
	h, err := s.driver.Create(ctx, spec)
	if err != nil {
		s.fail(ctx, rec.ID, err)
		return api.Sandbox{}, err
	}
	defer func() {
		if retErr != nil {
			tctx, cancel := s.teardownContext(ctx)
			defer cancel()
			if err := s.driver.Destroy(tctx, h); err != nil {
				s.log.Error("roll back sandbox", "sandbox.id", rec.ID, "err", err)
			}
			s.fail(ctx, rec.ID, retErr)
		}
	}()
	raw, err := encodeHandle(h)
	if err != nil {
		return api.Sandbox{}, err
	}
	rec, err = s.store.UpdateSandbox(ctx, rec.ID, func(sb *store.Sandbox) error {
		sb.State = api.StateRunning
		sb.Handle = raw
		return nil
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	s.setAgent(rec.ID, h)
	s.startEgress(ctx, rec, h)
	s.seedOOM(rec.ID)
	s.log.Info("sandbox created", "sandbox.id", rec.ID, "tenant.id", rec.TenantID, "driver", s.driver.Name())
	s.emitCreated(ctx, rec)
	return s.toAPI(rec), nil
}

// fail marks a sandbox failed with the user-safe part of err and records
// that in its events.
func (s *Service) fail(ctx context.Context, id string, cause error) {
	_, _, msg := errdefs.Classify(cause)
	rec, err := s.store.UpdateSandbox(context.WithoutCancel(ctx), id, func(sb *store.Sandbox) error {
		sb.State = api.StateFailed
		sb.Error = msg
		return nil
	})
	if err != nil {
		s.log.Error("mark sandbox failed", "sandbox.id", id, "err", err)
	} else {
		s.emitFailed(ctx, rec, msg)
	}
	s.log.Warn("sandbox failed", "sandbox.id", id, "err", cause)
}

// teardownContext outlives ctx's cancellation and has its own deadline, so a
// client that hangs up never leaves a half-destroyed sandbox.
func (s *Service) teardownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.TeardownTimeout)
}
