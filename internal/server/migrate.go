package server

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/store/migrate"
)

// hutch store migrate's options, progress and report (internal/store/migrate),
// named here for the CLI, which imports no store.
type (
	MigrateOptions  = migrate.Options
	MigrateProgress = migrate.Progress
	MigrateReport   = migrate.Report
)

// MigrateStore is hutch store migrate: it copies a single machine's
// SQLite store into a new Postgres database (migrate.Run).
func MigrateStore(ctx context.Context, o MigrateOptions) (MigrateReport, error) {
	return migrate.Run(ctx, o)
}

// MigrateSource is the SQLite file a --from names (migrate.SourcePath).
func MigrateSource(from string) (string, error) { return migrate.SourcePath(from) }

// errNoKeyFile stops MasterKey from making a key file.
var errNoKeyFile = errors.New("no key file")

// MasterKey returns the id of the secrets master key hutch serve on
// dataDir would use, and where it is: env ($HUTCH_SECRETS_KEY's value)
// when set, else dataDir's key file (secrets.LoadKey). It makes no key:
// with neither, it returns "" and no error.
func MasterKey(env, dataDir string) (id, where string, err error) {
	s, src, err := secrets.LoadKey(env, dataDir, func() error { return errNoKeyFile })
	if errors.Is(err, errNoKeyFile) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	where = filepath.Join(dataDir, secrets.KeyFile)
	if src == secrets.KeyFromEnv {
		where = "$" + secrets.KeyEnv
	}
	return s.KeyID(), where, nil
}
