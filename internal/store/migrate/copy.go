package migrate

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// progressEvery is how many rows a table's copy tells Progress of at a
// time.
const progressEvery = 1000

// copier is one copy: the source's read transaction, the target's write
// transaction, and what it has learnt on the way.
type copier struct {
	src      *source
	tx       pgx.Tx
	progress func(Progress)
	report   *Report
	// states are the tenants copied as active whose state is another,
	// set once their rows are in (setTenantStates).
	states map[string]string
}

// pgColumn is a column of a Postgres table.
type pgColumn struct {
	name, typ string
	identity  bool // given by Postgres (GENERATED … AS IDENTITY)
}

// checkPlan fails unless plan.go names every table of both schemas.
func (c *copier) checkPlan(ctx context.Context) error {
	sqliteTables, err := c.src.tables(ctx)
	if err != nil {
		return fmt.Errorf("list the source's tables: %w", err)
	}
	rows, err := c.tx.Query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("list the target's tables: %w", err)
	}
	postgresTables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list the target's tables: %w", err)
	}
	return checkTables(sqliteTables, postgresTables)
}

// lockEmpty locks every table the copy writes against other writers
// (readers may go on) and fails unless they hold none of hutch's rows
// and the clocks stand where a new schema sets them.
func (c *copier) lockEmpty(ctx context.Context) error {
	names := []string{"sandbox_clock", "event_clock"}
	for _, t := range copied {
		names = append(names, t.name)
	}
	if _, err := c.tx.Exec(ctx, `SET LOCAL lock_timeout = '`+lockTimeout+`'`); err != nil {
		return err
	}
	if _, err := c.tx.Exec(ctx, `LOCK TABLE `+strings.Join(names, ", ")+` IN EXCLUSIVE MODE`); err != nil {
		return errdefs.Wrap(errdefs.ErrConflict, "target_busy", err, "the target's tables stayed locked for %s: is a hutch serve using the database?", lockTimeout)
	}
	for _, t := range copied {
		var some bool
		if err := c.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+quote(t.name)+`)`).Scan(&some); err != nil {
			return fmt.Errorf("read the target's %s: %w", t.name, err)
		}
		if some {
			return errdefs.Conflict("target_not_empty", "the target database already holds hutch's data (its %s has rows): migrate only into a new, empty database, before any hutch serve has started on it", t.name)
		}
	}
	var (
		rev  int64
		last string
	)
	if err := c.tx.QueryRow(ctx, `SELECT (SELECT rev FROM sandbox_clock), (SELECT last FROM event_clock)`).Scan(&rev, &last); err != nil {
		return fmt.Errorf("read the target's clocks: %w", err)
	}
	if rev != 0 || last != "" {
		return errdefs.Conflict("target_not_empty", "the target database has given sandbox revisions or event ids before (its clocks stand at %d and %q): migrate only into a new, empty database", rev, last)
	}
	return nil
}

// copyTable copies t's rows with Postgres's COPY, each value converted
// by its column's type.
func (c *copier) copyTable(ctx context.Context, t table) error {
	srcCols, err := c.src.columns(ctx, t.name)
	if err != nil {
		return err
	}
	pgCols, err := c.pgColumns(ctx, t.name)
	if err != nil {
		return err
	}
	var (
		into  []string // Postgres columns written, in order
		from  []string // the SQLite column of each, "" for a made one
		types []string // the Postgres type of each
	)
	made := func(col string, _ []any) (any, error) {
		return nil, fmt.Errorf("the plan names it made, and nothing makes it (copy.go)")
	}
	for _, pc := range pgCols {
		switch {
		case slices.Contains(srcCols, pc.name):
			into, from, types = append(into, pc.name), append(from, pc.name), append(types, pc.typ)
		case !slices.Contains(t.made, pc.name):
			return fmt.Errorf("postgres column %s.%s has no column in SQLite and the plan does not make it (plan.go)", t.name, pc.name)
		case pc.identity:
			// Postgres gives it, in the order of the copy.
		default:
			into, from, types = append(into, pc.name), append(from, ""), append(types, pc.typ)
		}
	}
	for _, sc := range srcCols {
		if !slices.ContainsFunc(pgCols, func(pc pgColumn) bool { return pc.name == sc }) {
			return fmt.Errorf("sqlite column %s.%s has no column in Postgres (plan.go)", t.name, sc)
		}
	}
	switch t.name {
	case "sandboxes":
		labels, n, err := c.labels(ctx)
		if err != nil {
			return err
		}
		c.report.Tables = append(c.report.Tables, TableCount{Table: "sandbox_labels", Into: "sandboxes.labels", Rows: n})
		id := slices.Index(into, "id")
		made = func(col string, row []any) (any, error) {
			m := labels[row[id].(string)]
			if col != "labels" || len(m) == 0 {
				return nil, nil // NULL when none, as the store writes them
			}
			return json.Marshal(m)
		}
	case "tenants":
		c.states = map[string]string{}
	}

	total, err := c.src.count(ctx, t.name)
	if err != nil {
		return err
	}
	var sel []string
	for _, f := range from {
		if f != "" {
			sel = append(sel, quote(f))
		}
	}
	q := `SELECT ` + strings.Join(sel, ", ") + ` FROM ` + quote(t.name)
	if t.order != "" {
		q += ` ORDER BY ` + t.order
	}
	rows, err := c.src.tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	rs := &rowSource{rows: rows, vals: make([]any, len(sel)), out: make([]any, len(into))}
	rs.convert = func(vals []any) error {
		j := 0
		for i, f := range from {
			if f == "" {
				continue
			}
			v, err := convert(types[i], vals[j])
			if err != nil {
				return fmt.Errorf("column %s: %w", f, err)
			}
			rs.out[i] = v
			j++
		}
		for i, f := range from {
			if f != "" {
				continue
			}
			v, err := made(into[i], rs.out)
			if err != nil {
				return fmt.Errorf("column %s: %w", into[i], err)
			}
			rs.out[i] = v
		}
		if t.name == "tenants" {
			c.holdState(into, rs.out)
		}
		return nil
	}
	rs.tick = func(n int64) {
		if c.progress != nil && (n%progressEvery == 0 || n == total) {
			c.progress(Progress{Table: t.name, Rows: n, Total: total})
		}
	}
	n, err := c.tx.CopyFrom(ctx, pgx.Identifier{t.name}, into, rs)
	if err != nil {
		return err
	}
	if n != total {
		return fmt.Errorf("copied %d rows of %d", n, total)
	}
	if c.progress != nil && n == 0 {
		c.progress(Progress{Table: t.name})
	}
	c.report.Tables = append(c.report.Tables, TableCount{Table: t.name, Rows: n})
	return nil
}

// holdState copies a tenant as active, whatever its state: Postgres's
// trigger refuses rows of a tenant in any other state, and the tenant's
// rows come after it. setTenantStates gives it its state back.
func (c *copier) holdState(into []string, row []any) {
	i, id := slices.Index(into, "state"), slices.Index(into, "id")
	if st, _ := row[i].(string); st != string(api.TenantActive) {
		c.states[row[id].(string)] = st
		row[i] = string(api.TenantActive)
	}
}

// labels reads every sandbox's labels.
func (c *copier) labels(ctx context.Context) (map[string]map[string]string, int64, error) {
	out := map[string]map[string]string{}
	var n int64
	err := c.src.each(ctx, `SELECT sandbox_id, name, value FROM sandbox_labels`, func(vals []any) error {
		id, name, value := vals[0].(string), vals[1].(string), vals[2].(string)
		if out[id] == nil {
			out[id] = map[string]string{}
		}
		out[id][name] = value
		n++
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read sandbox_labels: %w", err)
	}
	return out, n, nil
}

// pgColumns lists a target table's columns, in order.
func (c *copier) pgColumns(ctx context.Context, table string) ([]pgColumn, error) {
	rows, err := c.tx.Query(ctx, `SELECT column_name::text, data_type::text, is_identity = 'YES'
		FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1
		ORDER BY ordinal_position`, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgColumn, error) {
		var pc pgColumn
		err := r.Scan(&pc.name, &pc.typ, &pc.identity)
		return pc, err
	})
}

// rowSource is the SQLite rows of one table as pgx's COPY reads them.
type rowSource struct {
	rows    *sql.Rows
	vals    []any // one row as SQLite gives it
	out     []any // the same row as Postgres takes it
	convert func(vals []any) error
	tick    func(n int64)
	n       int64
	err     error
}

func (r *rowSource) Next() bool {
	if r.err != nil || !r.rows.Next() {
		return false
	}
	ptrs := make([]any, len(r.vals))
	for i := range r.vals {
		ptrs[i] = &r.vals[i]
	}
	if r.err = r.rows.Scan(ptrs...); r.err != nil {
		return false
	}
	if r.err = r.convert(r.vals); r.err != nil {
		return false
	}
	r.n++
	r.tick(r.n)
	return true
}

func (r *rowSource) Values() ([]any, error) { return r.out, nil }

func (r *rowSource) Err() error {
	if r.err != nil {
		return fmt.Errorf("row %d: %w", r.n+1, r.err)
	}
	return r.rows.Err()
}
