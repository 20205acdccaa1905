package server

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"

	// The stores this build has: each registers itself.
	_ "github.com/hutchdev/hutch/internal/store/postgres"
	_ "github.com/hutchdev/hutch/internal/store/sqlite"
)

// openStore opens the configured store, in the data directory (which
// spends the disk reserve when the filesystem fills) or on the database
// --store-url names, the event log over it that wakes event streams, and
// the directory of its sandboxes.
func (s *Server) openStore(ctx context.Context, p *parts) error {
	reg, ok := store.Lookup(s.cfg.Store)
	if !ok {
		return fmt.Errorf("store %q: this build has %v", s.cfg.Store, store.Names())
	}
	st, err := reg.Factory(ctx, store.Options{Dir: s.cfg.DataDir, DSN: s.cfg.StoreURL, OnFull: p.disk.Release})
	if err != nil {
		return fmt.Errorf("open the %s store: %w", reg.Name, err)
	}
	if s.cfg.StoreURL != "" {
		s.log.Info("store opened", "store", reg.Name, "store.url", s.cfg.StoreURLRedacted())
	}
	s.onClose("store", func(context.Context) error { return st.Close() })
	p.store = st
	p.events = events.New(st, events.Config{Retention: s.cfg.EventRetention, MaxPerTenant: s.cfg.EventMaxPerTenant, Log: s.log})
	p.directory = sandbox.NewDirectory(st)
	return nil
}
