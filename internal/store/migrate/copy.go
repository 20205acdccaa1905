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
	// labelRows counts the rows of sandbox_labels folded into sandboxes.
	labelRows int64
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

// column is one Postgres column a table's copy writes.
type column struct {
	name string // Postgres's
	from string // the SQLite column it is read from; "" for one the copy makes
	typ  string // Postgres's data_type
}

// copyTable copies t's rows with Postgres's COPY, each value converted
// by its column's type.
func (c *copier) copyTable(ctx context.Context, t table) error {
	cols, err := c.columns(ctx, t)
	if err != nil {
		return err
	}
	made, err := c.maker(ctx, t)
	if err != nil {
		return err
	}
	if t.name == "tenants" {
		c.states = map[string]string{}
	}
	total, err := c.src.count(ctx, t.name)
	if err != nil {
		return err
	}
	var into, sel []string
	for _, col := range cols {
		into = append(into, col.name)
		if col.from != "" {
			sel = append(sel, quote(col.from))
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
	rs := &rowSource{rows: rows, vals: make([]any, len(sel)), out: make([]any, len(cols))}
	rs.convert = func(vals []any) error {
		j := 0
		for i, col := range cols {
			if col.from == "" {
				continue
			}
			v, err := convert(col.typ, vals[j])
			if err != nil {
				return fmt.Errorf("column %s: %w", col.name, err)
			}
			rs.out[i], j = v, j+1
		}
		for i, col := range cols {
			if col.from != "" {
				continue
			}
			v, err := made(col.name, into, rs.out)
			if err != nil {
				return fmt.Errorf("column %s: %w", col.name, err)
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
	if t.name == "sandboxes" {
		c.report.Tables = append(c.report.Tables, TableCount{Table: "sandbox_labels", Into: "sandboxes.labels", Rows: c.labelRows})
	}
	return nil
}

// columns pairs each column of t's Postgres table with its SQLite twin,
// and fails on a column of either without one that the plan does not
// name made. A made column Postgres gives (an identity) is left out.
func (c *copier) columns(ctx context.Context, t table) ([]column, error) {
	srcCols, err := c.src.columns(ctx, t.name)
	if err != nil {
		return nil, err
	}
	pgCols, err := c.pgColumns(ctx, t.name)
	if err != nil {
		return nil, err
	}
	var cols []column
	for _, pc := range pgCols {
		switch {
		case slices.Contains(srcCols, pc.name):
			cols = append(cols, column{name: pc.name, from: pc.name, typ: pc.typ})
		case !slices.Contains(t.made, pc.name):
			return nil, fmt.Errorf("postgres column %s.%s has no column in SQLite and the plan does not make it (plan.go)", t.name, pc.name)
		case !pc.identity:
			cols = append(cols, column{name: pc.name, typ: pc.typ})
		}
	}
	for _, sc := range srcCols {
		if !slices.ContainsFunc(pgCols, func(pc pgColumn) bool { return pc.name == sc }) {
			return nil, fmt.Errorf("sqlite column %s.%s has no column in Postgres (plan.go)", t.name, sc)
		}
	}
	return cols, nil
}

// maker returns what makes t's made columns from a row's converted
// values (into names them): sandboxes' labels, from sandbox_labels.
func (c *copier) maker(ctx context.Context, t table) (func(col string, into []string, row []any) (any, error), error) {
	none := func(col string, _ []string, _ []any) (any, error) {
		return nil, fmt.Errorf("the plan names it made, and nothing makes it (copy.go)")
	}
	if t.name != "sandboxes" {
		return none, nil
	}
	labels, err := c.labels(ctx)
	if err != nil {
		return nil, err
	}
	return func(col string, into []string, row []any) (any, error) {
		if col != "labels" {
			return none(col, into, row)
		}
		m := labels[row[slices.Index(into, "id")].(string)]
		if len(m) == 0 {
			return nil, nil // NULL when none, as the store writes them
		}
		return json.Marshal(m)
	}, nil
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

// labels reads every sandbox's labels, counting the rows in labelRows.
func (c *copier) labels(ctx context.Context) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := c.src.each(ctx, `SELECT sandbox_id, name, value FROM sandbox_labels`, func(vals []any) error {
		id, name, value := vals[0].(string), vals[1].(string), vals[2].(string)
		if out[id] == nil {
			out[id] = map[string]string{}
		}
		out[id][name] = value
		c.labelRows++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sandbox_labels: %w", err)
	}
	return out, nil
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
