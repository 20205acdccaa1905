package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The advisory locks the store takes, transaction-scoped: each is held
// from the statement that takes it to the transaction's end, in every
// process on the database. A lock is a class (the first of
// pg_advisory_xact_lock's two keys) and a name hashed into the second; a
// collision of two names only makes them wait for each other.
const (
	// keysLock (one name) serialises what follows the keys' lineage: a
	// key created by a key, and a revocation with its cascade and its
	// count of the admin keys left.
	keysLock int32 = iota + 1
	// admissionLock (a tenant's id) serialises a tenant's admissions
	// (Admit).
	admissionLock
	// taskLogLock (a task's id) numbers a task's log chunks one at a
	// time.
	taskLogLock
)

// lock takes the advisory lock class of name for the rest of tx.
func lock(ctx context.Context, tx pgx.Tx, class int32, name string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, class, name); err != nil {
		return fmt.Errorf("take lock %d of %q: %w", class, name, err)
	}
	return nil
}
