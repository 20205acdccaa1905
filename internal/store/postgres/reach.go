package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// A database that cannot be reached or used now (its server down,
// refusing connections, shutting down or full of connections, or every
// connection of the pool busy past AcquireWait) is 503
// store_unavailable with a Retry-After, never a 500: the request may
// pass in a moment, on this node or another. Every statement the Store
// runs goes through db, which says so of each error; a transaction's
// errors are said so by write and Admit.

// Bounds of a wait for the database, so that a request never hangs on
// it: AcquireWait for a connection of the pool (every one busy, or a new
// one connecting), ConnectTimeout for a new connection where the URL sets
// no connect_timeout.
const (
	AcquireWait    = 5 * time.Second
	ConnectTimeout = 5 * time.Second
)

// RetryAfter is the Retry-After of a store_unavailable answer.
const RetryAfter = 2 * time.Second

// unreachable returns err as 503 store_unavailable when it says the
// database cannot be reached or used now, and err as it is otherwise. ctx
// is the caller's: a deadline of its own is its error, not the store's.
func unreachable(ctx context.Context, err error) error {
	if err == nil || !down(ctx, err) {
		return err
	}
	return &errdefs.Error{Class: errdefs.ErrUnavailable, Code: "store_unavailable", RetryAfter: RetryAfter, Err: err,
		Message: "the database cannot be reached or is busy; try again shortly"}
}

// down reports whether err says the database cannot be reached or used
// now.
func down(ctx context.Context, err error) bool {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		switch {
		case strings.HasPrefix(e.Code, "08"): // connection exception
			return true
		case e.Code == "57P01", e.Code == "57P02", e.Code == "57P03": // shutting down, crashed, starting
			return true
		case e.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// The store's own bounds (AcquireWait, ConnectTimeout), not the
		// caller's.
		return ctx.Err() == nil
	case errors.As(err, &ce), errors.As(err, &ne):
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// db is the pool as the Store's statements use it: each error said as
// unreachable says it.
type db struct{ *pgxpool.Pool }

func (d db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := d.Pool.Query(ctx, sql, args...)
	if err != nil {
		return rows, unreachable(ctx, err)
	}
	return reachRows{rows, ctx}, nil
}

func (d db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return reachRow{d.Pool.QueryRow(ctx, sql, args...), ctx}
}

func (d db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.Pool.Exec(ctx, sql, args...)
	return tag, unreachable(ctx, err)
}

func (d db) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := d.Pool.Begin(ctx)
	return tx, unreachable(ctx, err)
}

type reachRows struct {
	pgx.Rows
	ctx context.Context
}

func (r reachRows) Err() error { return unreachable(r.ctx, r.Rows.Err()) }

type reachRow struct {
	pgx.Row
	ctx context.Context
}

func (r reachRow) Scan(dest ...any) error { return unreachable(r.ctx, r.Row.Scan(dest...)) }

// acquireBound bounds each wait for a connection of a pool by
// AcquireWait: pgxpool's acquire tracer gives the context the acquire
// runs under, the caller's otherwise unbounded.
type acquireBound struct{}

type acquireCancelKey struct{}

var _ pgxpool.AcquireTracer = acquireBound{}

func (acquireBound) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	ctx, cancel := context.WithTimeout(ctx, AcquireWait)
	return context.WithValue(ctx, acquireCancelKey{}, cancel)
}

func (acquireBound) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if cancel, ok := ctx.Value(acquireCancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

// pgxpool finds an AcquireTracer among the connections' tracer; these
// trace no query.
func (acquireBound) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (acquireBound) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
