package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/internal/store"
)

// The migrations are the files migrations/NNNN_name.sql
// (store.ReadMigrations); each applied version is recorded in
// schema_migrations.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the schema's migrations, in order: a database is at
// this build's schema when it records each of their versions.
func Migrations() ([]store.Migration, error) {
	return store.ReadMigrations(migrationFiles, "migrations")
}

// migrate applies every pending migration in one transaction: a failure
// leaves the database as it was.
func migrate(ctx context.Context, db *sql.DB) (retErr error) {
	ms, err := store.ReadMigrations(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	pending, err := store.Pending(ms, applied)
	if err != nil {
		return err
	}
	for _, m := range pending {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, formatTime(time.Now())); err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
	}
	return tx.Commit()
}

func appliedVersions(ctx context.Context, tx *sql.Tx) ([]int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read schema versions: %w", err)
	}
	defer rows.Close()
	var applied []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read schema versions: %w", err)
		}
		applied = append(applied, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema versions: %w", err)
	}
	return applied, nil
}
