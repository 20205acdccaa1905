package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store/sqlite"

	_ "modernc.org/sqlite" // the "sqlite" driver, as the SQLite store opens it
)

// SourcePath returns the SQLite file a --from names: sqlite:///abs/path
// (or sqlite://rel/path, or a bare path) to the file, or to the data
// directory that holds it (sqlite.FileName). The file must exist: the
// copy never makes one.
func SourcePath(from string) (string, error) {
	path, ok := strings.CutPrefix(from, "sqlite://")
	if !ok && strings.Contains(from, "://") {
		return "", errdefs.Invalid("invalid_source", "the source must be a sqlite:// URL or a path to hutch's SQLite file or data directory, not %q", from)
	}
	if path == "" {
		return "", errdefs.Invalid("invalid_source", "the source's path is empty: write sqlite:///path/to/%s", sqlite.FileName)
	}
	if ok {
		if p, err := url.PathUnescape(path); err == nil {
			path = p
		}
	}
	if strings.ContainsRune(path, '?') {
		return "", errdefs.Invalid("invalid_source", "the source's path must not contain '?'")
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errdefs.NotFound("source_not_found", "the source %s does not exist", path)
	}
	if err != nil {
		return "", fmt.Errorf("the source: %w", err)
	}
	if fi.IsDir() {
		path = filepath.Join(path, sqlite.FileName)
		if _, err := os.Stat(path); err != nil {
			return "", errdefs.NotFound("source_not_found", "the directory holds no %s: %v", sqlite.FileName, err)
		}
	}
	return path, nil
}

// source is the SQLite file, open for reading in one transaction that
// holds its write lock: every table is read at one moment, and nothing
// is written to the file until the copy ends.
type source struct {
	db *sql.DB
	tx *sql.Tx
}

// openSource opens path for reading after checking no process holds it
// open (held_linux.go) and that its schema is this build's.
func openSource(ctx context.Context, path string) (_ *source, retErr error) {
	if err := checkNotHeld(path); err != nil {
		return nil, err
	}
	// One connection, whose transaction begins IMMEDIATE: it holds the
	// database's write lock from its start to the copy's end, so a
	// hutch serve started meanwhile writes nothing the copy would miss
	// (its first write waits, then fails: database is locked). It runs
	// only SELECTs and is rolled back (query_only would refuse the
	// lock).
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	defer func() {
		if retErr != nil {
			db.Close()
		}
	}()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &source{db: db, tx: tx}
	if err := s.checkSchema(ctx); err != nil {
		s.close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (s *source) close() {
	_ = s.tx.Rollback()
	_ = s.db.Close()
}

// checkSchema fails unless the file records exactly this build's SQLite
// migrations: older, and this build's Postgres schema may hold what the
// file has not yet got; newer, and the file may hold what this build
// does not know.
func (s *source) checkSchema(ctx context.Context) error {
	ms, err := sqlite.Migrations()
	if err != nil {
		return err
	}
	var want []int
	for _, m := range ms {
		want = append(want, m.Version)
	}
	var have []int
	err = s.each(ctx, `SELECT version FROM schema_migrations ORDER BY version`, func(vals []any) error {
		v, ok := vals[0].(int64)
		if !ok {
			return fmt.Errorf("schema_migrations holds a version of type %T", vals[0])
		}
		have = append(have, int(v))
		return nil
	})
	if err != nil {
		return errdefs.Invalid("source_not_hutch", "not hutch's SQLite database (%v)", err)
	}
	if !slices.Equal(have, want) {
		return errdefs.Conflict("source_schema", "the file's schema is at version %d, this hutch's at %d: run this hutch's serve on it once (it upgrades the file at start), or migrate with the hutch that wrote it",
			last(have), last(want))
	}
	return nil
}

func last(vs []int) int {
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)-1]
}

// tables lists the file's tables.
func (s *source) tables(ctx context.Context) ([]string, error) {
	var names []string
	err := s.each(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`, func(vals []any) error {
		names = append(names, vals[0].(string))
		return nil
	})
	return names, err
}

// columns lists a table's columns, in order.
func (s *source) columns(ctx context.Context, table string) ([]string, error) {
	var cols []string
	err := s.each(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, func(vals []any) error {
		cols = append(cols, vals[0].(string))
		return nil
	}, table)
	if err == nil && len(cols) == 0 {
		err = fmt.Errorf("no table %s", table)
	}
	return cols, err
}

// count is the rows of table.
func (s *source) count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := s.tx.QueryRowContext(ctx, `SELECT count(*) FROM `+quote(table)).Scan(&n)
	return n, err
}

// each runs query and calls fn with each row's values, as the driver
// gives them: int64, float64, string, []byte or nil.
func (s *source) each(ctx context.Context, query string, fn func([]any) error, args ...any) error {
	rows, err := s.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// quote quotes an identifier for either database.
func quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
