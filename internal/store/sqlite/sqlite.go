// Package sqlite is the Store on one SQLite file, the default for a single
// machine. It runs in WAL mode with one writer: every write goes through a
// single connection, so writers queue in Go instead of meeting SQLITE_BUSY,
// while reads use a pool of read-only connections that WAL lets run beside
// the writer. Migrations are embedded and applied by Open.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// FileName is the database's name in the data directory.
const FileName = "hutch.db"

// busyTimeoutMS bounds how long a connection waits for a lock held by
// another process (a backup, the sqlite3 shell); writers in this process
// never contend because they share one connection.
const busyTimeoutMS = 5000

var _ store.Store = (*Store)(nil)

// Store is a store.Store on a SQLite file.
type Store struct {
	w      *sql.DB // the one writer connection; writes begin IMMEDIATE
	r      *sql.DB // read-only pool
	reads  *stmts  // r's queries, prepared once
	onFull func() bool
}

// Open opens or creates the database at path, applies pending migrations
// and returns a ready Store. Close it when done. It is local file work
// bounded by the busy timeout, so it takes no context.
func Open(path string) (_ *Store, retErr error) {
	ctx := context.Background()
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, errdefs.Invalid("invalid_db_path", "the database path must be set and must not contain '?'")
	}
	// Owner-only: SQLite gives its -wal and -shm files the database
	// file's mode, so making the file first settles all three.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	f.Close()
	w, err := sql.Open("sqlite", dsn(path, map[string]string{
		"busy_timeout": fmt.Sprint(busyTimeoutMS),
		"foreign_keys": "1",
		"journal_mode": "WAL",
		"synchronous":  "NORMAL",
	}, "&_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if retErr != nil {
			_ = w.Close()
		}
	}()
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return nil, fmt.Errorf("open %s: journal mode is %q, not WAL: is the file on a file system without shared memory?", path, mode)
	}
	if err := migrate(ctx, w); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}

	r, err := sql.Open("sqlite", dsn(path, map[string]string{
		"busy_timeout": fmt.Sprint(busyTimeoutMS),
		"foreign_keys": "1",
		"query_only":   "1",
	}, ""))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	return &Store{w: w, r: r, reads: newStmts(r)}, nil
}

// dsn is modernc.org/sqlite's form: the file name, then one
// _pragma=name(value) per pragma, run on every new connection.
func dsn(path string, pragmas map[string]string, extra string) string {
	var q []string
	for name, v := range pragmas {
		q = append(q, "_pragma="+url.QueryEscape(name+"("+v+")"))
	}
	return path + "?" + strings.Join(q, "&") + extra
}

// Close closes the database.
func (s *Store) Close() error {
	return errors.Join(s.reads.close(), s.r.Close(), s.w.Close())
}

// write runs fn in a write transaction on the one writer connection. A
// write that finds the filesystem full is tried once more if onFull frees
// room, and is otherwise a 507 that says what is full, never a 500. One
// that adds to a tenant that is not active is a 403 (tenantRefusal).
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	err := s.writeOnce(ctx, fn)
	if isFull(err) && s.onFull != nil && s.onFull() {
		err = s.writeOnce(ctx, fn)
	}
	if refused := tenantRefusal(err); refused != nil {
		return refused
	}
	if isFull(err) {
		return errdefs.Wrap(errdefs.ErrInsufficientStorage, "insufficient_storage", err,
			"the filesystem of hutch's data directory is full: free space or inodes there; nothing can be recorded until then")
	}
	return err
}

func (s *Store) writeOnce(ctx context.Context, fn func(*sql.Tx) error) (retErr error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// querier is what reads need from a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// scoped returns the condition limiting col to what sc may see by id: none
// for the system, the tenant otherwise.
func scoped(sc store.Scope, col string) (string, []any) {
	if sc.All {
		return "", nil
	}
	return " AND " + col + " = ?", []any{sc.TenantID}
}

// listed returns the condition limiting a list to sc's tenant: every
// tenant only for the system without a principal.
func listed(sc store.Scope, col string) (string, []any) {
	if sc.TenantID == "" {
		return "", nil
	}
	return " AND " + col + " = ?", []any{sc.TenantID}
}
