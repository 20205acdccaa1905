package server

import (
	"context"
	"fmt"
	"os"

	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
)

// openAuth makes the admin tenant and its key on the first start (the
// key of $HUTCH_ADMIN_KEY, or one it writes to <data>/admin.key), and
// the one authenticator of API keys for every door that takes them (the
// API, previews, the E2B layer), so that revoking a key through the API
// ends its previews' requests too.
func (s *Server) openAuth(ctx context.Context, p *parts) error {
	if s.cfg.AdminKey != "" {
		if _, err := auth.BootstrapKey(ctx, p.store, s.cfg.AdminKey, s.log); err != nil {
			return fmt.Errorf("bootstrap admin: %w", err)
		}
	} else {
		keyPath, created, err := auth.Bootstrap(tenancy.System(ctx), p.store, s.cfg.DataDir, s.log)
		if err != nil {
			return fmt.Errorf("bootstrap admin: %w", err)
		}
		s.AdminKeyPath = keyPath
		if created {
			fmt.Fprintf(os.Stderr, "hutch: created the admin API key in %s (mode 0600); use it as 'Authorization: Bearer <key>'\n", keyPath)
		}
	}
	p.auth = &auth.Authenticator{Store: p.store, Log: s.log, Quotas: p.quotas}
	return nil
}

// GenerateKey is a new admin key for $HUTCH_ADMIN_KEY (`hutch key
// generate`): well formed, held by no store until a first start takes it.
func GenerateKey() string { return auth.GenerateKey() }
