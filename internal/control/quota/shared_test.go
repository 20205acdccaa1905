package quota

import (
	"context"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/postgres"
	"github.com/hutchdev/hutch/internal/testutil"
)

func TestMain(m *testing.M) { testutil.RunWithPostgres(m) }

// TestAdmitAcrossPlanes: two control planes, each with its quotas and
// its own Store on one Postgres database, racing creates for a tenant's
// last places admit exactly the limit between them.
func TestAdmitAcrossPlanes(t *testing.T) {
	const n, limit = 8, 3
	dsn := testutil.PostgresURL(t)
	ctx := context.Background()
	var planes []*Service
	var first *postgres.Store
	for range 2 {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if first == nil {
			first = st
		}
		planes = append(planes, New(Config{Store: st, Defaults: api.QuotaLimits{Sandboxes: limit}}))
	}
	tn := store.Tenant{ID: ids.New(), Name: "t"}
	if err := first.CreateTenant(tenancy.System(ctx), tn); err != nil {
		t.Fatal(err)
	}
	member := tenancy.With(ctx, tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})
	var (
		errs  []error
		mu    sync.Mutex
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for _, q := range planes {
		st := q.store.(*postgres.Store)
		for range n {
			wg.Go(func() {
				<-start
				c, err := q.Admit(member, tn.ID, Ask{Sandboxes: 1}, nil)
				if err == nil {
					defer c.Cancel()
					err = c.Commit(member, nil, func() error {
						return st.CreateSandbox(member, &store.Sandbox{State: api.StateCreating, Template: "host", Driver: "process"})
					})
				}
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
	}
	close(start)
	wg.Wait()
	admitted := 0
	for _, err := range errs {
		if err == nil {
			admitted++
			continue
		}
		refused(t, "a create past the quota", err, "sandboxes")
	}
	if admitted != limit {
		t.Fatalf("%d of %d creates on two planes admitted; want %d", admitted, 2*n, limit)
	}
}
