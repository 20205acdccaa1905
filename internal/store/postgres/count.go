package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

// CountSandboxes implements store.Store: one grouped count, no rows read
// out, so a metrics scrape costs the same however many sandboxes were
// ever made.
func (s *Store) CountSandboxes(ctx context.Context) ([]store.SandboxCount, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT state, driver, count(*) FROM sandboxes GROUP BY state, driver ORDER BY state COLLATE "C", driver`)
	if err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.SandboxCount, error) {
		var c store.SandboxCount
		return c, r.Scan(&c.State, &c.Driver, &c.N)
	})
	if err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	return out, nil
}
