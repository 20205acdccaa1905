package tenants

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
)

// Recover goes on, in the background, with what a restart cut short: the
// deletion of every tenant still deleting runs on from where it was, and
// every sandbox of a suspended tenant that the sandbox service's own
// recovery found running is stopped (a suspension cut short before its
// stops). Call it once, after the sandbox service and the apps layer
// recovered.
func (s *Service) Recover(ctx context.Context) error {
	all, err := s.st.ListTenants(tenancy.System(ctx))
	if err != nil {
		return fmt.Errorf("tenants: recover: %w", err)
	}
	for _, t := range all {
		switch t.State {
		case api.TenantDeleting:
			s.log.InfoContext(ctx, "tenant deletion goes on after a restart", logattr.Tenant(t.ID))
			s.start(t.ID)
		case api.TenantSuspended:
			s.goOwned(func(ctx context.Context) {
				unlock := s.locks.Lock(t.ID)
				defer unlock()
				if now, err := s.st.GetTenant(tenancy.System(ctx), t.ID); err != nil || now.State != api.TenantSuspended {
					return // resumed or deleted meanwhile
				}
				if n, err := s.stopAll(ctx, t.ID); n > 0 || err != nil {
					s.log.Info("suspended tenant's sandboxes stopped after a restart", logattr.Tenant(t.ID), "stopped", n, "err", err)
				}
			})
		}
	}
	return nil
}
