package sqlite

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// CountSandboxes implements store.Store: one grouped count, no rows read
// out, so a metrics scrape costs the same however many sandboxes were
// ever made.
func (s *Store) CountSandboxes(ctx context.Context) ([]store.SandboxCount, error) {
	sc, err := store.ScopeOf(ctx)
	if err != nil {
		return nil, err
	}
	if !sc.All {
		return nil, store.SystemOnly()
	}
	rows, err := s.reads.QueryContext(ctx, `SELECT state, driver, count(*) FROM sandboxes GROUP BY state, driver ORDER BY state, driver`)
	if err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	defer rows.Close()
	var out []store.SandboxCount
	for rows.Next() {
		var (
			c     store.SandboxCount
			state string
		)
		if err := rows.Scan(&state, &c.Driver, &c.N); err != nil {
			return nil, fmt.Errorf("count sandboxes: %w", err)
		}
		c.State = api.SandboxState(state)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count sandboxes: %w", err)
	}
	return out, nil
}
