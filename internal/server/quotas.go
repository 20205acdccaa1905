package server

import (
	"context"

	"github.com/hutchdev/hutch/internal/control/quota"
)

// openQuotas builds the tenants' quotas on the store, with the server's
// defaults (--tenant-*): every part that makes what a tenant keeps, or
// holds a stream open for one, admits it there.
func (s *Server) openQuotas(_ context.Context, p *parts) error {
	p.quotas = quota.New(quota.Config{Store: p.store, Defaults: s.cfg.TenantQuotas, Log: s.log})
	return nil
}
