package sqlite

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/store"
)

// Name is the store's name in the registry and in --store.
const Name = "sqlite"

func init() {
	store.Register(store.Registration{
		Name:    Name,
		Summary: "one SQLite file in the data directory, for a single machine",
		Factory: func(_ context.Context, o store.Options) (store.Store, error) {
			if o.Dir == "" {
				return nil, errors.New("the sqlite store needs the data directory")
			}
			st, err := Open(filepath.Join(o.Dir, FileName))
			if err != nil {
				return nil, err
			}
			st.onFull = o.OnFull
			return st, nil
		},
	})
}
