package server

import (
	"context"
	"fmt"
	"os"

	"github.com/hutchdev/hutch/internal/control/secrets"
)

// openSecrets loads the secrets master key ($HUTCH_SECRETS_KEY or
// <data>/secrets.key) and builds the secret store on it.
func (s *Server) openSecrets(ctx context.Context, p *parts) error {
	sealer, err := secrets.Load(ctx, p.store, os.Getenv(secrets.KeyEnv), s.cfg.DataDir, s.log)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	p.sealer = sealer
	p.secrets = secrets.New(secrets.Config{MaxValueBytes: s.cfg.MaxSecretBytes, Quotas: p.quotas}, p.store, sealer, p.events, s.log)
	return nil
}
