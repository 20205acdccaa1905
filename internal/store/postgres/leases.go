package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/store"
)

// AcquireLease implements store.Store. The upsert is one statement: of
// two holders racing for a free lease, Postgres's row lock on the
// conflict makes the second see the first's row, which is neither its
// own nor expired.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return store.Lease{}, err
	}
	if err := store.CheckLease(name, holder, ttl); err != nil {
		return store.Lease{}, err
	}
	var l store.Lease
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO leases (name, holder, acquired_at, expires_at)
				VALUES ($1, $2, clock_timestamp(), clock_timestamp() + $3 * interval '1 microsecond')
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
				acquired_at = CASE WHEN leases.holder = excluded.holder AND leases.expires_at > excluded.acquired_at
					THEN leases.acquired_at ELSE excluded.acquired_at END
			WHERE leases.holder = excluded.holder OR leases.expires_at <= excluded.acquired_at`,
			name, holder, ttl.Microseconds()); err != nil {
			return fmt.Errorf("acquire lease %s: %w", name, err)
		}
		var err error
		l, err = scanLease(tx.QueryRow(ctx, `SELECT name, holder, acquired_at, expires_at FROM leases WHERE name = $1`, name))
		return err
	})
	return l, err
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	if err := store.RequireSystem(ctx); err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, holder); err != nil {
			return fmt.Errorf("release lease %s: %w", name, err)
		}
		return nil
	})
}

// ListLeases implements store.Store.
func (s *Store) ListLeases(ctx context.Context) ([]store.Lease, error) {
	if err := store.CheckAdminScope(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT name, holder, acquired_at, expires_at FROM leases
		WHERE expires_at > clock_timestamp() ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	var out []store.Lease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return out, nil
}

func scanLease(row pgx.Row) (store.Lease, error) {
	var l store.Lease
	if err := row.Scan(&l.Name, &l.Holder, &l.AcquiredAt, &l.ExpiresAt); err != nil {
		return store.Lease{}, fmt.Errorf("read lease: %w", err)
	}
	l.AcquiredAt, l.ExpiresAt = store.Time(l.AcquiredAt), store.Time(l.ExpiresAt)
	return l, nil
}
