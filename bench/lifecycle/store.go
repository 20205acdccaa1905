package main

import (
	"fmt"

	"github.com/hutchdev/hutch/internal/testutil/pgtemp"
)

// startStore starts what the server's store needs: nothing for sqlite
// (its file is in the data directory); for postgres a throwaway cluster
// with Postgres's durable defaults (fsync, synchronous commits), as a
// deployment runs it, and a database in it. stop removes it.
func startStore(kind string) (url string, stop func(), err error) {
	if kind != "postgres" {
		return "", func() {}, nil
	}
	progress("starting Postgres")
	pg, err := pgtemp.Start(pgtemp.Options{Durable: true})
	if err != nil {
		return "", nil, fmt.Errorf("-store postgres: %w", err)
	}
	if url, err = pg.CreateDatabase("hutch"); err != nil {
		pg.Stop()
		return "", nil, fmt.Errorf("-store postgres: %w", err)
	}
	return url, pg.Stop, nil
}
