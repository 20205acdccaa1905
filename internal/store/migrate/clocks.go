package migrate

import (
	"context"
	"fmt"
)

// setTenantStates gives the tenants copied as active (holdState) their
// own states back, now that their rows are in.
func (c *copier) setTenantStates(ctx context.Context) error {
	for id, st := range c.states {
		tag, err := c.tx.Exec(ctx, `UPDATE tenants SET state = $2 WHERE id = $1 AND state = 'active'`, id, st)
		if err != nil {
			return fmt.Errorf("set tenant %s's state: %w", id, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("set tenant %s's state: the tenant is not as copied", id)
		}
	}
	return nil
}

// setClocks sets sandbox_clock and event_clock to the greatest revision
// and event id copied, as the SQLite store's next write would read them
// (the greatest stored), so the next of each comes after every copied
// one.
func (c *copier) setClocks(ctx context.Context) error {
	err := c.tx.QueryRow(ctx, `UPDATE sandbox_clock SET rev = (SELECT coalesce(max(rev), 0) FROM sandboxes) RETURNING rev`).
		Scan(&c.report.SandboxRev)
	if err != nil {
		return fmt.Errorf("set sandbox_clock: %w", err)
	}
	err = c.tx.QueryRow(ctx, `UPDATE event_clock SET last = (SELECT coalesce(max(id), '') FROM events) RETURNING last`).
		Scan(&c.report.EventID)
	if err != nil {
		return fmt.Errorf("set event_clock: %w", err)
	}
	return nil
}

// countSealed counts the sealed values copied by the master key that
// sealed them.
func (c *copier) countSealed(ctx context.Context) error {
	rows, err := c.tx.Query(ctx, `SELECT key_id, count(*) FROM (
		SELECT key_id FROM secrets UNION ALL SELECT key_id FROM app_config WHERE sensitive) s GROUP BY key_id`)
	if err != nil {
		return fmt.Errorf("count sealed values: %w", err)
	}
	defer rows.Close()
	c.report.SealedBy = map[string]int64{}
	for rows.Next() {
		var (
			id string
			n  int64
		)
		if err := rows.Scan(&id, &n); err != nil {
			return fmt.Errorf("count sealed values: %w", err)
		}
		c.report.SealedBy[id] = n
	}
	return rows.Err()
}
