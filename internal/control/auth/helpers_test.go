package auth

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// openStore opens a real SQLite store in a temporary directory.
func openStore(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

// wantErr fails t unless err has class and code.
func wantErr(t *testing.T, what string, err, class error, code string) {
	t.Helper()
	_, got, _ := errdefs.Classify(err)
	if !errors.Is(err, class) || got != code {
		t.Errorf("%s: error %v (code %q), want class %v code %q", what, err, got, class, code)
	}
}

// authenticate is Begin for a request that ends at once.
func authenticate(a *Authenticator, ctx context.Context, header string) (tenancy.Principal, error) {
	ctx, end, err := a.Begin(ctx, header)
	if err != nil {
		return tenancy.Principal{}, err
	}
	defer end()
	p, _ := tenancy.From(ctx)
	return p, nil
}

// begun is the context of a request of key full that a begins, in flight
// until t ends.
func begun(t *testing.T, a *Authenticator, full string) context.Context {
	t.Helper()
	ctx, end, err := a.Begin(context.Background(), "Bearer "+full)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(end)
	return ctx
}
