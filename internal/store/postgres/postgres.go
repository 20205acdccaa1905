// Package postgres is the Store on a Postgres database, for several
// control planes that share one state. It talks to Postgres through
// pgx's pool directly (no database/sql): one pool of connections, each
// with its prepared statements cached, and Postgres's own types
// (timestamptz, jsonb, bytea) in and out.
//
// Several processes write at once, so what SQLite's one writer made true
// by itself is made true here in each write (docs/ARCHITECTURE.md, "The
// Postgres store"): a read-modify-write locks its row (SELECT … FOR NO
// KEY UPDATE), so of two racing state transitions exactly one finds the
// state it expects; an insert into a tenant reads the tenant FOR SHARE
// (migration 0001's trigger), so it never lands in a tenant a
// suspension or deletion has passed; event ids and sandbox revisions
// are given under one row's lock each (event_clock, sandbox_clock), so
// they grow in commit order; checks that count (the last admin key, a
// template or volume in use, an app's one running task) lock what they
// count; and Admit serialises a tenant's admissions across processes
// under an advisory lock. Writes run at READ COMMITTED and are tried
// again on a deadlock or serialization failure.
//
// Migrations are embedded and applied by Open, once, under an advisory
// lock (migrate.go). Every plane is told what the others write through
// the change feed: triggers NOTIFY in each write's transaction, and the
// Store LISTENs on a connection of its own (changes.go).
package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

var _ store.Store = (*Store)(nil)

// Store is a store.Store on a Postgres database.
type Store struct {
	pool db
	// admissions holds the connections of Admit's locks, apart from
	// pool, so admissions waiting for their tenant's lock never take
	// the connections the writes they wait for need.
	admissions *pgxpool.Pool
	// changes is the change feed (changes.go), on a connection of its
	// own from the first Subscribe on.
	changes *feed
}

// DefaultMaxConns is the size of a Store's pool where the URL sets no
// pool_max_conns; Admit's pool is half that (docs/DEPLOY.md,
// "Connections", says why).
const DefaultMaxConns = 16

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string, as libpq takes), applies pending migrations and
// returns a ready Store. Close it when done.
func Open(ctx context.Context, dsn string) (_ *Store, retErr error) {
	if dsn == "" {
		return nil, errdefs.Invalid("no_store_url", "the postgres store needs the database's URL (--store-url or HUTCH_STORE_URL)")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "invalid_store_url", err, "the store URL is not one Postgres takes")
	}
	cfg.AfterConnect = utcTimes
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	cfg.ConnConfig.Tracer = acquireBound{}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	defer func() {
		if retErr != nil {
			pool.Close()
		}
	}()
	if err := migrate(ctx, pool); err != nil {
		return nil, fmt.Errorf("migrate postgres: %w", err)
	}
	lcfg := cfg.Copy()
	lcfg.MinConns, lcfg.MaxConns = 0, max(2, cfg.MaxConns/2)
	admissions, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return &Store{pool: db{pool}, admissions: admissions, changes: newFeed(cfg.ConnConfig)}, nil
}

// utcTimes makes a connection read timestamptz in UTC, as every store
// gives times back (store.Time).
func utcTimes(_ context.Context, c *pgx.Conn) error {
	c.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
		Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
	return nil
}

// Close ends the change feed and closes the pools.
func (s *Store) Close() error {
	s.changes.close()
	s.admissions.Close()
	s.pool.Close()
	return nil
}

// maxAttempts bounds the tries of one write that meets a deadlock or a
// serialization failure.
const maxAttempts = 5

// write runs fn in a transaction and commits it. A transaction Postgres
// aborted for a deadlock or a serialization failure is run again from
// the start (fn must be safe to repeat), up to maxAttempts times. A
// write refused for its tenant's state is a 403 (tenantRefusal); one
// that finds the database server's disk full, a 507; one that cannot
// reach it, a 503 (unreachable).
func (s *Store) write(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for range maxAttempts {
		if err = pgx.BeginFunc(ctx, s.pool, fn); !retryable(err) {
			break
		}
	}
	if refused := tenantRefusal(err); refused != nil {
		return refused
	}
	if isFull(err) {
		return errdefs.Wrap(errdefs.ErrInsufficientStorage, "insufficient_storage", err,
			"the Postgres server's disk is full: nothing can be recorded until room is made there")
	}
	return unreachable(ctx, err)
}

// querier is what reads need from the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// scoped returns the condition limiting col to what sc may see by id,
// adding its argument to args: none for the system, the tenant
// otherwise.
func scoped(sc store.Scope, col string, args pgx.NamedArgs) string {
	if sc.All {
		return ""
	}
	args["scope"] = sc.TenantID
	return " AND " + col + " = @scope"
}

// listed returns the condition limiting a list to sc's tenant, adding
// its argument to args: every tenant only for the system without a
// principal.
func listed(sc store.Scope, col string, args pgx.NamedArgs) string {
	if sc.TenantID == "" {
		return ""
	}
	args["scope"] = sc.TenantID
	return " AND " + col + " = @scope"
}
