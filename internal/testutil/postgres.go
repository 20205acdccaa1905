package testutil

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/testutil/pgtemp"
)

// RequirePostgresEnv, set to 1, makes a test that needs Postgres fail
// rather than skip when Debian's postgresql is not installed: CI sets it.
const RequirePostgresEnv = "HUTCH_REQUIRE_POSTGRES"

// The one Postgres server of a test binary, started by the first
// PostgresURL and stopped by StopPostgres.
var pg struct {
	once   sync.Once
	server *pgtemp.Server
	err    error
}

// PostgresURL returns the URL of a new, empty database of t's own on the
// test binary's Postgres server, which it starts on first use from
// Debian's postgresql (the newest /usr/lib/postgresql/*/bin); the
// database is dropped when t ends. Without the binaries it skips t,
// unless RequirePostgresEnv is 1. The package's TestMain is
// RunWithPostgres, which stops the server after its tests.
func PostgresURL(t testing.TB) string {
	t.Helper()
	pg.once.Do(func() { pg.server, pg.err = pgtemp.Start(pgtemp.Options{}) })
	started(t, pg.err)
	name := "t_" + ids.Token(8)
	url, err := pg.server.CreateDatabase(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.server.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return url
}

// OwnPostgres starts a Postgres server of t's own, not the test
// binary's shared one, for a test that stops it: stop (once; again does
// nothing; also when t ends). url names an empty database on it. Without
// the binaries it skips t, unless RequirePostgresEnv is 1.
func OwnPostgres(t testing.TB) (url string, stop func()) {
	t.Helper()
	srv, err := pgtemp.Start(pgtemp.Options{})
	started(t, err)
	stop = sync.OnceFunc(srv.Stop)
	t.Cleanup(stop)
	url, err = srv.CreateDatabase("t_" + ids.Token(8))
	if err != nil {
		t.Fatal(err)
	}
	return url, stop
}

// started fails t on a server's start that failed, or skips it when
// Debian's postgresql is missing and RequirePostgresEnv is not 1.
func started(t testing.TB, err error) {
	t.Helper()
	var missing *pgtemp.Missing
	switch {
	case errors.As(err, &missing) && os.Getenv(RequirePostgresEnv) != "1":
		t.Skipf("%v (%s=1 makes this a failure)", err, RequirePostgresEnv)
	case err != nil:
		t.Fatal(err)
	}
}

// RunWithPostgres is the TestMain of a package whose tests call
// PostgresURL: it runs them, stops the server, and exits with their
// code.
func RunWithPostgres(m *testing.M) {
	code := m.Run()
	StopPostgres()
	os.Exit(code)
}

// StopPostgres stops the server PostgresURL started, if it did, and
// removes its directory: for a TestMain that does more than
// RunWithPostgres after its tests.
func StopPostgres() {
	if s := pg.server; s != nil {
		s.Stop()
	}
}
