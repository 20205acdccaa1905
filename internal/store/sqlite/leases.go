package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if err := store.RequireSystem(ctx); err != nil {
		return store.Lease{}, err
	}
	if err := store.CheckLease(name, holder, ttl); err != nil {
		return store.Lease{}, err
	}
	now := time.Now()
	var l store.Lease
	err := s.write(ctx, func(tx *sql.Tx) error {
		// The upsert changes the row only when it is free, expired or
		// holder's; either way the row as it stands is read after.
		if _, err := tx.ExecContext(ctx, `INSERT INTO leases (name, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
				acquired_at = CASE WHEN leases.holder = excluded.holder AND leases.expires_at > excluded.acquired_at
					THEN leases.acquired_at ELSE excluded.acquired_at END
			WHERE leases.holder = excluded.holder OR leases.expires_at <= excluded.acquired_at`,
			name, holder, formatTime(now), formatTime(now.Add(ttl))); err != nil {
			return fmt.Errorf("acquire lease %s: %w", name, err)
		}
		var err error
		l, err = scanLease(tx.QueryRowContext(ctx, `SELECT name, holder, acquired_at, expires_at FROM leases WHERE name = ?`, name))
		return err
	})
	return l, err
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	if err := store.RequireSystem(ctx); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder); err != nil {
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
	rows, err := s.reads.QueryContext(ctx, `SELECT name, holder, acquired_at, expires_at FROM leases
		WHERE expires_at > ? ORDER BY name`, formatTime(time.Now()))
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

func scanLease(row interface{ Scan(...any) error }) (store.Lease, error) {
	var (
		l                store.Lease
		acquired, expiry string
	)
	if err := row.Scan(&l.Name, &l.Holder, &acquired, &expiry); err != nil {
		return store.Lease{}, fmt.Errorf("read lease: %w", err)
	}
	var err error
	if l.AcquiredAt, err = parseTime(acquired); err != nil {
		return store.Lease{}, err
	}
	if l.ExpiresAt, err = parseTime(expiry); err != nil {
		return store.Lease{}, err
	}
	return l, nil
}
