package store

import "context"

// Admitter is a store that several control planes may share: it
// serialises the admissions of a tenant across all of them, where one
// process's lock serialises only its own. The quota service finds it by
// type assertion; a store of one process (SQLite) has no need of it.
type Admitter interface {
	// Admit runs fn while it holds tenantID's admission lock, which
	// every Admit of the tenant takes, in any process on the same
	// database, and returns fn's error as is. What fn reads of the
	// tenant's usage and the record it writes through the store are
	// one step to every other Admit of the tenant: of racing creates
	// that each check a limit first, no more than the limit pass. The
	// lock is held until fn returns; fn must not call Admit.
	Admit(ctx context.Context, tenantID string, fn func() error) error
}
