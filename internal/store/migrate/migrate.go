// Package migrate copies a single machine's state, the SQLite store's
// file, into a Postgres database that several control planes then share:
// hutch store migrate.
//
// The copy is of rows, not records: every table of the SQLite schema is
// copied into its Postgres twin with its ids, revisions and times as
// they are, each value converted by its Postgres column's type the way
// the two stores write it (convert.go); sandboxes' labels, a table of
// their own in SQLite, become the sandboxes' labels column; the clocks
// Postgres gives the next event id and sandbox revision from are set
// past the copied ones, so a write after the copy comes after it.
// Sealed values (secrets, sensitive app config) are copied as the sealed
// bytes they are, never opened: they open with the master key that
// sealed them, which every node must then share. plan.go says what
// becomes of each table of either schema, and a table it does not name
// stops the copy.
//
// The copy is all or nothing: the Postgres schema and every row are
// written in one transaction, which commits only if the database held
// none of hutch's rows before and every row was copied. The SQLite file
// is read in one transaction too (one moment of it), and is refused
// while another process, such as a running hutch serve, holds it open.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store/postgres"
)

// Options says what to copy where.
type Options struct {
	// From names the SQLite file (SourcePath).
	From string
	// To is the Postgres database, as hutch serve's --store-url takes
	// it: a postgres:// URL or libpq's key=value string.
	To string
	// DryRun runs the whole copy, checks and conversions included, and
	// rolls it back: the Report says what a copy would have written.
	DryRun bool
	// Progress, when set, is told of each table's rows as they are
	// copied, from the goroutine that called Run.
	Progress func(Progress)
}

// Progress is how far the copy of one table has come.
type Progress struct {
	Table       string
	Rows, Total int64
}

// Report is what a copy wrote (or, for a dry run, would have).
type Report struct {
	Source string `json:"source"` // the SQLite file
	DryRun bool   `json:"dry_run"`
	// Tables are the tables copied, in order, and their rows.
	Tables []TableCount `json:"tables"`
	// SandboxRev and EventID are where the Postgres clocks now stand:
	// the next sandbox write and event come after them.
	SandboxRev int64  `json:"sandbox_rev"`
	EventID    string `json:"event_id"`
	// SealedBy counts the sealed values copied (secrets and sensitive
	// app config) by the id of the master key that sealed them: every
	// node needs that key (HUTCH_SECRETS_KEY) to open them.
	SealedBy map[string]int64 `json:"sealed_by"`
}

// TableCount is one table's rows.
type TableCount struct {
	Table string `json:"table"`
	// Into is where a SQLite table of its own went in Postgres
	// (sandbox_labels: sandboxes.labels); "" for a table of both.
	Into string `json:"into,omitempty"`
	Rows int64  `json:"rows"`
}

// lockTimeout bounds the wait for the target's tables: a hutch serve
// writing to them holds the copy off only this long.
const lockTimeout = "10s"

// Run copies o.From into o.To. A target that already holds any of
// hutch's rows is refused (409 target_not_empty) and left as it was, as
// is every target whose copy fails part way.
func Run(ctx context.Context, o Options) (Report, error) {
	path, err := SourcePath(o.From)
	if err != nil {
		return Report{}, err
	}
	if strings.Contains(o.To, "://") && !strings.HasPrefix(o.To, "postgres://") && !strings.HasPrefix(o.To, "postgresql://") {
		return Report{}, errdefs.Invalid("invalid_target", "the target must be a postgres:// URL (or libpq's key=value string)")
	}
	cfg, err := pgx.ParseConfig(o.To)
	if err != nil {
		return Report{}, errdefs.Wrap(errdefs.ErrInvalid, "invalid_target", err, "the target URL is not one Postgres takes")
	}
	src, err := openSource(ctx, path)
	if err != nil {
		return Report{}, err
	}
	defer src.close()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return Report{}, errdefs.Wrap(errdefs.ErrUnavailable, "target_unreachable", err, "cannot connect to the target database")
	}
	defer conn.Close(context.WithoutCancel(ctx))

	rep := Report{Source: path, DryRun: o.DryRun}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		c := &copier{src: src, tx: tx, progress: o.Progress, report: &rep}
		if err := c.run(ctx); err != nil {
			return err
		}
		if o.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return Report{}, err
	}
	return rep, nil
}

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// run is the copy, in the target's transaction.
func (c *copier) run(ctx context.Context) error {
	if err := postgres.Migrate(ctx, c.tx); err != nil {
		return fmt.Errorf("make the target's schema: %w", err)
	}
	if err := c.checkPlan(ctx); err != nil {
		return err
	}
	if err := c.lockEmpty(ctx); err != nil {
		return err
	}
	for _, t := range copied {
		if err := c.copyTable(ctx, t); err != nil {
			return fmt.Errorf("copy %s: %w", t.name, err)
		}
	}
	if err := c.setTenantStates(ctx); err != nil {
		return err
	}
	if err := c.setClocks(ctx); err != nil {
		return err
	}
	return c.countSealed(ctx)
}
