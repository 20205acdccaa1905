package sqlite

import (
	"errors"
	"strings"
	"syscall"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/store"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// isUnique reports whether err is a unique or primary key violation.
func isUnique(err error) bool {
	var e *msqlite.Error
	return errors.As(err, &e) &&
		(e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// isForeignKey reports whether err is a foreign key violation.
func isForeignKey(err error) bool {
	var e *msqlite.Error
	return errors.As(err, &e) && e.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// isFull reports whether err says the filesystem is full: SQLite's own
// SQLITE_FULL, or a failed write whose cause is ENOSPC or EDQUOT.
func isFull(err error) bool {
	if err == nil {
		return false
	}
	var e *msqlite.Error
	if errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_FULL {
		return true
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// tenantRefusal is the store's answer when err is migration 0021's
// trigger refusing a row of a tenant that is not active; else nil.
func tenantRefusal(err error) error {
	var e *msqlite.Error
	if !errors.As(err, &e) || e.Code() != sqlite3.SQLITE_CONSTRAINT_TRIGGER {
		return nil
	}
	switch msg := e.Error(); {
	case strings.Contains(msg, "tenant_suspended"):
		return store.TenantNotActive(api.TenantSuspended)
	case strings.Contains(msg, "tenant_deleted"):
		return store.TenantNotActive(api.TenantDeleted)
	}
	return nil
}
