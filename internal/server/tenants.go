package server

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/internal/control/tenants"
)

// openTenants builds the tenants service over every part a tenant owns
// something in, and runs on what a restart cut short: deletions under
// way, a suspension's stops (tenants.Service.Recover, in the
// background). It comes after the sandbox service and the apps layer
// recovered, so a deletion finds them settled.
func (s *Server) openTenants(ctx context.Context, p *parts) error {
	cfg := tenants.Config{Store: p.store, Keys: p.auth, Sandboxes: p.sandboxes, Apps: p.apps, Events: p.events, Log: s.log}
	// A nil *Service must not become a non-nil interface.
	if p.templates != nil {
		cfg.Templates = p.templates
	}
	if p.volumes != nil {
		cfg.Volumes = p.volumes
	}
	svc, err := tenants.New(cfg)
	if err != nil {
		return fmt.Errorf("tenants: %w", err)
	}
	s.onClose("tenants", func(context.Context) error { svc.Close(); return nil })
	if err := svc.Recover(ctx); err != nil {
		s.log.Warn("tenants: recovery was incomplete", "err", err)
	}
	p.tenants = svc
	return nil
}
