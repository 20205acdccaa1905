package postgres

import (
	"context"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestRegistered: the registry opens the store on Options.DSN, and
// refuses without one (400 no_store_url) or with one Postgres does not
// take.
func TestRegistered(t *testing.T) {
	reg, ok := store.Lookup(Name)
	if !ok {
		t.Fatalf("%s is not registered", Name)
	}
	for dsn, code := range map[string]string{"": "no_store_url", "postgres://h:notaport/db": "invalid_store_url"} {
		if st, err := reg.Factory(context.Background(), store.Options{DSN: dsn}); !errdefs.HasCode(err, code) {
			if st != nil {
				st.Close()
			}
			t.Errorf("Factory(%q): %v; want %s", dsn, err, code)
		}
	}
	st, err := reg.Factory(context.Background(), store.Options{Dir: t.TempDir(), DSN: testutil.PostgresURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Error(err)
	}
}
