package postgres

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/internal/store"
)

var _ store.Admitter = (*Store)(nil)

// Admit implements store.Admitter with admissionLock, an advisory lock
// held by a transaction on a connection of the admissions pool while fn
// runs: fn's reads and writes go through the main pool and commit on
// their own. The transaction writes nothing and is rolled back, which
// lets go of the lock; a process that dies lets go of its locks with its
// connections.
func (s *Store) Admit(ctx context.Context, tenantID string, fn func() error) error {
	tx, err := s.admissions.Begin(ctx)
	if err != nil {
		return fmt.Errorf("admit for tenant %s: %w", tenantID, unreachable(ctx, err))
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := lock(ctx, tx, admissionLock, tenantID); err != nil {
		return unreachable(ctx, err)
	}
	return fn()
}
