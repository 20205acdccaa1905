package server

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/internal/store"
)

// followChanges tells the parts that keep the store's records in memory,
// or hold requests open on them, what every control plane on the store
// writes, when the store tells it (store.Notifier, Postgres): the
// authenticator (keys revoked, tenants' states), the sandbox service
// (records) and the event log (appends). It comes before the sandboxes
// recover, the first part to keep a record, and before any request. A
// store that tells nothing is one process's, whose every write is this
// server's own and reaches each part where it is made.
func (s *Server) followChanges(ctx context.Context, p *parts) error {
	n, ok := p.store.(store.Notifier)
	if !ok {
		return nil
	}
	stop, err := n.Subscribe(ctx, func(ctx context.Context, c store.Change) {
		if c.Kind == store.ChangeResync {
			s.log.WarnContext(ctx, "the store's change feed lost its connection and listens again: what was kept in memory is read again", "err", c.Err)
		}
		p.auth.StoreChanged(ctx, c)
		p.sandboxes.StoreChanged(ctx, c)
		p.events.StoreChanged(ctx, c)
	})
	if err != nil {
		return fmt.Errorf("follow the store's changes: %w", err)
	}
	s.onClose("store changes", func(context.Context) error { stop(); return nil })
	return nil
}
