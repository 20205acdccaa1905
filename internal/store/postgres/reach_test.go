package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestStoreUnavailable: a database server that stops answers every read,
// write and admission 503 store_unavailable with a Retry-After, not an
// internal error, and within the bounds of a wait for it.
func TestStoreUnavailable(t *testing.T) {
	dsn, stop := testutil.OwnPostgres(t)
	s := open(t, dsn)
	ctx := tenancy.System(context.Background())
	if _, err := s.RegisterNode(ctx, store.Node{Name: "n"}); err != nil {
		t.Fatal(err)
	}
	stop()
	for name, call := range map[string]func() error{
		"read":  func() error { _, err := s.ListNodes(ctx); return err },
		"row":   func() error { _, err := s.GetNode(ctx, "n"); return err },
		"write": func() error { _, err := s.RegisterNode(ctx, store.Node{Name: "m"}); return err },
		"admit": func() error { return s.Admit(ctx, "t", func() error { return nil }) },
	} {
		start := time.Now()
		err := call()
		if !errors.Is(err, errdefs.ErrUnavailable) || !errdefs.HasCode(err, "store_unavailable") || errdefs.RetryAfter(err) == 0 {
			t.Errorf("%s with the server stopped: %v, want 503 store_unavailable with a Retry-After", name, err)
		}
		if d := time.Since(start); d > ConnectTimeout+AcquireWait {
			t.Errorf("%s took %v", name, d)
		}
	}
}

// TestPoolExhausted: a request that waits for a connection of a pool
// every connection of which is busy gives up after AcquireWait, 503
// store_unavailable, rather than waiting for as long as its caller does.
func TestPoolExhausted(t *testing.T) {
	s := open(t, testutil.PostgresURL(t)+"&pool_max_conns=1")
	ctx := tenancy.System(context.Background())
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	start := time.Now()
	_, err = s.ListNodes(ctx)
	if !errdefs.HasCode(err, "store_unavailable") {
		t.Fatalf("a read with the one connection held: %v, want store_unavailable", err)
	}
	if d := time.Since(start); d < AcquireWait-time.Second || d > AcquireWait+2*time.Second {
		t.Fatalf("gave up after %v, want about %v", d, AcquireWait)
	}
	// The caller's own deadline is the caller's: not the store's failure.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.ListNodes(short); errdefs.HasCode(err, "store_unavailable") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read past its caller's deadline: %v, want the deadline", err)
	}
}
