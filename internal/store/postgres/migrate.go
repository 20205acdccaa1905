package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/hutchdev/hutch/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The migrations are the files migrations/NNNN_name.sql
// (store.ReadMigrations); each applied version is recorded in
// schema_migrations.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLock is the key of the advisory lock migrations run under, the
// same in every hutch: of several control planes starting together on a
// new database, one migrates and the others find it done.
const migrateLock int64 = 0x6875746368_0001 // "hutch", 1

// migrate applies every pending migration in one transaction that holds
// migrateLock: a failure leaves the database as it was, and a second
// migrate waits for the first and then finds nothing to do.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return Migrate(ctx, tx) })
}

// Migrate applies every pending migration in tx, the caller's
// transaction, under migrateLock, which it holds until tx ends: what
// Open does, for a caller that writes the schema and its first rows in
// one transaction (hutch store migrate, internal/store/migrate).
func Migrate(ctx context.Context, tx pgx.Tx) error {
	ms, err := store.ReadMigrations(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("read schema versions: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fmt.Errorf("read schema versions: %w", err)
	}
	pending, err := store.Pending(ms, applied)
	if err != nil {
		return err
	}
	for _, m := range pending {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
	}
	return nil
}
