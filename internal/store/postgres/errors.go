package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"
)

// The SQLSTATEs the store tells apart.
const (
	uniqueViolation      = "23505"
	foreignKeyViolation  = "23503"
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
	diskFull             = "53100"
	raisedException      = "P0001" // RAISE EXCEPTION without a code
)

// sqlState is err's SQLSTATE, "" when Postgres did not send it.
func sqlState(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// isUnique reports whether err is a unique or primary key violation.
func isUnique(err error) bool { return sqlState(err) == uniqueViolation }

// isForeignKey reports whether err is a foreign key violation.
func isForeignKey(err error) bool { return sqlState(err) == foreignKeyViolation }

// retryable reports whether Postgres aborted err's transaction for
// running beside another, so that running it again may pass.
func retryable(err error) bool {
	s := sqlState(err)
	return s == serializationFailure || s == deadlockDetected
}

// isFull reports whether err says the server's disk is full.
func isFull(err error) bool { return sqlState(err) == diskFull }

// tenantRefusal is the store's answer when err is migration 0001's
// trigger refusing a row of a tenant that is not active; else nil.
func tenantRefusal(err error) error {
	var e *pgconn.PgError
	if !errors.As(err, &e) || e.Code != raisedException {
		return nil
	}
	switch e.Message {
	case "tenant_suspended":
		return store.TenantNotActive(api.TenantSuspended)
	case "tenant_deleted":
		return store.TenantNotActive(api.TenantDeleted)
	}
	return nil
}
