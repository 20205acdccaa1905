package postgres

import (
	"context"
	"testing"

	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/storetest"
	"github.com/hutchdev/hutch/internal/testutil"
)

func TestMain(m *testing.M) { testutil.RunWithPostgres(m) }

// open opens a store on dsn, closed when t ends.
func open(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, testutil.PostgresURL(t))
	})
}
