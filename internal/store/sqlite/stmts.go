package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmts prepares each query once on a pool and keeps it, so the reads
// every request makes (its key, its sandbox) skip SQLite's parser, which
// was a tenth of an exec's time in the control plane. The queries are the
// store's own strings; a few have a list whose length a caller chooses
// (event types), so at most maxStmts are kept and the rest run
// unprepared.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxStmts bounds the statements kept.
const maxStmts = 256

var errCacheFull = errors.New("statement cache full")

func newStmts(db *sql.DB) *stmts {
	return &stmts{db: db, m: map[string]*sql.Stmt{}}
}

func (c *stmts) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= maxStmts {
		return nil, errCacheFull
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// QueryRowContext is sql.DB's, through the query's prepared statement.
func (c *stmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// QueryContext is sql.DB's, through the query's prepared statement.
func (c *stmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return c.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// close closes the statements.
func (c *stmts) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}
