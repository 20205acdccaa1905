package postgres

import (
	"context"

	"github.com/hutchdev/hutch/internal/store"
)

// Name is the store's name in the registry and in --store.
const Name = "postgres"

func init() {
	store.Register(store.Registration{
		Name:     Name,
		Summary:  "a Postgres database (--store-url), which several control planes may share",
		NeedsDSN: true,
		Factory: func(ctx context.Context, o store.Options) (store.Store, error) {
			return Open(ctx, o.DSN)
		},
	})
}
