package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestRegistered: the registry opens the store on Options.DSN, and
// refuses without one (400 no_store_url), with one Postgres does not
// take, or one of a server that is not there, never saying the URL's
// password.
func TestRegistered(t *testing.T) {
	reg, ok := store.Lookup(Name)
	if !ok || !reg.NeedsDSN {
		t.Fatalf("%s is not registered as a store that needs a DSN", Name)
	}
	for dsn, code := range map[string]string{
		"":                                  "no_store_url",
		"postgres://u:s3cret@h:notaport/db": "invalid_store_url",
		"postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=5": "",
	} {
		st, err := reg.Factory(context.Background(), store.Options{DSN: dsn})
		if err == nil {
			st.Close()
			t.Errorf("Factory(%q) opened", dsn)
			continue
		}
		if code != "" && !errdefs.HasCode(err, code) {
			t.Errorf("Factory(%q): %v; want %s", dsn, err, code)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Factory(%q) says the password: %v", dsn, err)
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
