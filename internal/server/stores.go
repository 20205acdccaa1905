package server

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"

	// The stores this build has: each registers itself.
	_ "github.com/hutchdev/hutch/internal/store/sqlite"
)

// openStore opens the configured store in the data directory, which must
// exist.
func openStore(ctx context.Context, cfg config.Config, onFull func() bool) (store.Store, error) {
	reg, ok := store.Lookup(cfg.Store)
	if !ok {
		return nil, fmt.Errorf("store %q: this build has %v", cfg.Store, store.Names())
	}
	st, err := reg.Factory(ctx, store.Options{Dir: cfg.DataDir, OnFull: onFull})
	if err != nil {
		return nil, fmt.Errorf("open the %s store: %w", reg.Name, err)
	}
	return st, nil
}
