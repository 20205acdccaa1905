package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/internal/server"
	serveconfig "github.com/hutchdev/hutch/internal/server/config"
)

const storeMigrateLong = `Copy a single machine's state, the SQLite store in its data directory, into a
new Postgres database that several hutch serve nodes then share
(hutch serve --store postgres --store-url …; docs/DEPLOY.md).

Every table is copied with its ids, revisions and times, and Postgres's
clocks are set past them, so what the nodes write next comes after. Secrets
are copied sealed, never opened: every node needs the master key that sealed
them, as HUTCH_SECRETS_KEY (the source's is its data directory's secrets.key,
unless HUTCH_SECRETS_KEY was set).

The copy is one transaction: a database that already holds hutch's data is
refused and left as it was, and so is one whose copy fails. Stop hutch serve
first: a file another process holds open is refused. --dry-run runs the
whole copy and rolls it back, and says what it would have written.

--from is sqlite:///path/to/hutch.db (or the data directory that holds it);
--to is the database as hutch serve's --store-url takes it (a postgres:// URL
or libpq's key=value string), by default $HUTCH_STORE_URL.`

// newStoreCmd is `hutch store`: tools for the server's store, run on
// the server's machine while it is stopped, not through its API.
func newStoreCmd(e *env) *cobra.Command {
	return newGroup("store", "Move the server's state between stores",
		"Tools for the server's store, run on its machine while hutch serve is stopped.",
		newStoreMigrateCmd(e))
}

// newStoreMigrateCmd is `hutch store migrate`.
func newStoreMigrateCmd(e *env) *cobra.Command {
	var o server.MigrateOptions
	cmd := &cobra.Command{
		Use:   "migrate --from sqlite:///path/to/hutch.db --to postgres://…",
		Short: "Copy a SQLite store into a new Postgres database",
		Long:  storeMigrateLong,
		Args:  nArgs(0, 0, "store migrate takes no arguments, only --from and --to"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.To == "" {
				o.To = e.getenv("HUTCH_STORE_URL")
			}
			if o.From == "" || o.To == "" {
				return usagef("store migrate needs --from sqlite:///path/to/hutch.db and --to postgres://… (or HUTCH_STORE_URL)")
			}
			return runStoreMigrate(cmd.Context(), e, o)
		},
	}
	cmd.Flags().StringVar(&o.From, "from", "", "the SQLite store: sqlite:///path/to/hutch.db or its data directory")
	cmd.Flags().StringVar(&o.To, "to", "", "the Postgres database: postgres://user:password@host/db (default $HUTCH_STORE_URL)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "copy, roll back, and say what would have been written")
	return cmd
}

// runStoreMigrate runs the copy, with a line of progress on stderr when
// that is a terminal, and prints its report.
func runStoreMigrate(ctx context.Context, e *env, o server.MigrateOptions) error {
	if !e.json && isTerminalWriter(e.stderr) {
		o.Progress = func(p server.MigrateProgress) {
			fmt.Fprintf(e.stderr, "\r\x1b[Kcopying %s: %d of %d rows", p.Table, p.Rows, p.Total)
		}
		defer fmt.Fprint(e.stderr, "\r\x1b[K")
	}
	rep, err := server.MigrateStore(ctx, o)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, rep)
	}
	w := newTable(e.stdout)
	row(w, "TABLE", "ROWS", "")
	for _, t := range rep.Tables {
		into := ""
		if t.Into != "" {
			into = "into " + t.Into
		}
		row(w, t.Table, fmt.Sprint(t.Rows), into)
	}
	if err := w.Flush(); err != nil {
		return local(err)
	}
	target := serveconfig.Config{StoreURL: o.To}.StoreURLRedacted()
	verb := "copied " + rep.Source + " into " + target
	if rep.DryRun {
		verb = "dry run: nothing was written; the copy of " + rep.Source + " into " + target + " would go through"
	}
	last := rep.EventID
	if last == "" {
		last = "none"
	}
	fmt.Fprintf(e.stdout, "%s\nnew sandbox revisions follow %d, new event ids follow %s\n", verb, rep.SandboxRev, last)
	fmt.Fprintln(e.stdout, keyAdvice(e, rep))
	return nil
}

// keyAdvice says which master key every node needs, and whether the
// key the source's server would use sealed the values copied. It seals
// more than those counted (sandboxes' env values and agent tokens are
// sealed inside their records), so every node needs it whatever the
// count.
func keyAdvice(e *env, rep server.MigrateReport) string {
	var total int64
	var ids []string
	for id, n := range rep.SealedBy {
		total += n
		ids = append(ids, id)
	}
	slices.Sort(ids)
	const need = "every node needs it as HUTCH_SECRETS_KEY: it seals secrets, sensitive app config, and sandboxes' env values and agent tokens"
	id, where, err := server.MasterKey(e.getenv("HUTCH_SECRETS_KEY"), filepath.Dir(rep.Source))
	switch {
	case err != nil:
		return fmt.Sprintf("the source's master key could not be read here (%v); %s", err, need)
	case id == "":
		return fmt.Sprintf("no master key is here ($HUTCH_SECRETS_KEY or %s): find the key that served the source; %s",
			filepath.Join(filepath.Dir(rep.Source), "secrets.key"), need)
	case rep.SealedBy[id] != total:
		return fmt.Sprintf("warning: of %d sealed values, %d are by another master key than the one in %s (key ids %s): they open only with the key that sealed them",
			total, total-rep.SealedBy[id], where, strings.Join(ids, ", "))
	}
	return fmt.Sprintf("the master key is the one in %s (%d sealed values copied); %s", where, total, need)
}
