package tenants

import (
	"context"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// Suspend suspends a tenant: it is marked suspended first, so that
// nothing of it starts or changes from then on (its keys read, and
// nothing else: 403 tenant_suspended; its creates and starts are refused
// by admission and the store), then every sandbox of it is stopped, its
// files kept. Its data stay. Suspending a suspended tenant stops what is
// still running. The stops run to the end even when ctx is cancelled; a
// stop that fails is the answer's error, the tenant suspended all the
// same.
func (s *Service) Suspend(ctx context.Context, id string) (api.Tenant, error) {
	if _, err := s.target(ctx, id, "suspend"); err != nil {
		return api.Tenant{}, err
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	t, err := s.transition(ctx, id, []api.TenantState{api.TenantActive, api.TenantSuspended}, api.TenantSuspended, nil)
	if err != nil {
		return api.Tenant{}, err
	}
	stopped, err := s.stopAll(context.WithoutCancel(ctx), id)
	p, _ := tenancy.From(ctx)
	s.log.InfoContext(ctx, "tenant suspended", logattr.Tenant(id), logattr.Key(p.KeyID), "sandboxes_stopped", stopped, "err", err)
	s.record(p.TenantID, api.EventTenantSuspended, fmt.Sprintf("tenant %q suspended", t.Name), t, map[string]any{"stopped": stopped})
	if err != nil {
		return api.Tenant{}, errdefs.Wrap(errdefs.ErrUnavailable, "sandbox_not_stopped", err,
			"tenant %s is suspended, but not every sandbox of it stopped (the log says why): suspend it again to stop the rest", id)
	}
	return toAPI(t), nil
}

// Resume lifts a tenant's suspension: it may start and change things
// again. Its sandboxes stay stopped until it starts them. Resuming an
// active tenant is not an error; one being deleted is 409
// tenant_state_conflict.
func (s *Service) Resume(ctx context.Context, id string) (api.Tenant, error) {
	if _, err := s.target(ctx, id, "resume"); err != nil {
		return api.Tenant{}, err
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	t, err := s.transition(ctx, id, []api.TenantState{api.TenantSuspended, api.TenantActive}, api.TenantActive, nil)
	if err != nil {
		return api.Tenant{}, err
	}
	p, _ := tenancy.From(ctx)
	s.log.InfoContext(ctx, "tenant resumed", logattr.Tenant(id), logattr.Key(p.KeyID))
	s.record(p.TenantID, api.EventTenantResumed, fmt.Sprintf("tenant %q resumed", t.Name), t, nil)
	return toAPI(t), nil
}

// stopAll stops every sandbox of tenant id that is not stopped already
// (one still being created or started is stopped once that is done: the
// sandbox's lock orders them), and returns how many it stopped. It goes
// on past a failure and returns the failures joined.
func (s *Service) stopAll(ctx context.Context, id string) (int, error) {
	tctx := asTenant(ctx, id)
	sbs, err := s.sandboxes(tctx)
	if err != nil {
		return 0, err
	}
	stopped := 0
	var errs []error
	for _, sb := range sbs {
		switch sb.State {
		case api.StateStopped, api.StateDestroyed, api.StateDestroying, api.StateFailed:
			continue
		}
		_, err := s.cfg.Sandboxes.Stop(tctx, sb.ID)
		switch {
		case err == nil:
			stopped++
		case errdefs.HasCode(err, "sandbox_state_conflict"), errors.Is(err, errdefs.ErrNotFound):
			// It ended another way meanwhile: destroyed, failed.
		default:
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.ID, err))
		}
	}
	return stopped, errors.Join(errs...)
}

// sandboxes lists every sandbox of the tenant tctx acts as, destroyed
// ones included.
func (s *Service) sandboxes(tctx context.Context) ([]api.Sandbox, error) {
	var all []api.Sandbox
	opts := sandbox.ListOptions{Limit: sandbox.MaxPage}
	for {
		page, err := s.cfg.Sandboxes.List(tctx, opts)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Sandboxes...)
		if page.NextCursor == "" {
			return all, nil
		}
		opts.Cursor = page.NextCursor
	}
}
