package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/testutil"
)

// What SQLite's one writer never had to prove: two Stores on one
// database, as two control planes are, each with a pool of its own.

// planes opens n Stores on one new database.
func planes(t *testing.T, n int) []*Store {
	dsn := testutil.PostgresURL(t)
	out := make([]*Store, n)
	for i := range out {
		out[i] = open(t, dsn)
	}
	return out
}

func system() context.Context { return tenancy.System(context.Background()) }

// newTenant creates a tenant and returns its member's context.
func newTenant(t *testing.T, s store.Store) (string, context.Context) {
	t.Helper()
	id := ids.New()
	if err := s.CreateTenant(system(), store.Tenant{ID: id, Name: "t-" + id}); err != nil {
		t.Fatal(err)
	}
	return id, tenancy.With(context.Background(), tenancy.Principal{TenantID: id, KeyID: "k", Role: api.RoleMember})
}

// race runs fn(plane, i) on each plane from racers goroutines at once.
func race(stores []*Store, racers int, fn func(s *Store, i int)) {
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for _, s := range stores {
		for i := range racers {
			wg.Go(func() {
				<-start
				fn(s, i)
			})
		}
	}
	close(start)
	wg.Wait()
}

// TestAdmitAcrossPlanes: creates racing on two planes for a tenant's last
// places, each checking the limit under Admit, admit exactly the limit.
func TestAdmitAcrossPlanes(t *testing.T) {
	stores := planes(t, 2)
	tenant, ctx := newTenant(t, stores[0])
	const limit = 3
	var won atomic.Int32
	race(stores, 8, func(s *Store, _ int) {
		err := s.Admit(ctx, tenant, func() error {
			u, err := s.TenantUsage(system(), tenant)
			if err != nil {
				return err
			}
			if u.Sandboxes >= limit {
				return errdefs.New(errdefs.ErrRateLimited, "quota_exceeded", "full")
			}
			return s.CreateSandbox(ctx, &store.Sandbox{State: api.StateCreating, Template: "host", Driver: "process"})
		})
		switch {
		case err == nil:
			won.Add(1)
		case !errdefs.HasCode(err, "quota_exceeded"):
			t.Errorf("Admit: %v", err)
		}
	})
	if won.Load() != limit {
		t.Errorf("%d of 16 racing creates passed a limit of %d", won.Load(), limit)
	}
	if u, err := stores[1].TenantUsage(system(), tenant); err != nil || u.Sandboxes != limit {
		t.Errorf("usage after the race: %+v, %v; want %d sandboxes", u, err, limit)
	}
}

// TestTransitionAcrossPlanes: of racing transitions from one state on two
// planes exactly one wins, and the usage counts the winner's change once.
func TestTransitionAcrossPlanes(t *testing.T) {
	stores := planes(t, 2)
	tenant, ctx := newTenant(t, stores[0])
	sb := &store.Sandbox{State: api.StateRunning, Template: "host", Driver: "process", Limits: api.Limits{MemoryMB: 64}}
	if err := stores[0].CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	var won atomic.Int32
	race(stores, 8, func(s *Store, i int) {
		_, err := store.Transition(ctx, s, sb.ID, []api.SandboxState{api.StateRunning}, api.StateStopped,
			func(x *store.Sandbox) { x.Error = fmt.Sprint(i) })
		switch {
		case err == nil:
			won.Add(1)
		case !errdefs.HasCode(err, "sandbox_state_conflict"):
			t.Errorf("Transition: %v", err)
		}
	})
	if won.Load() != 1 {
		t.Errorf("%d racing transitions from running won; want 1", won.Load())
	}
	if u, err := stores[1].TenantUsage(system(), tenant); err != nil || u.MemoryMB != 0 || u.Sandboxes != 1 {
		t.Errorf("usage after the race: %+v, %v; want the sandbox stopped once", u, err)
	}
}

// follow pages through what next returns after the cursor it last
// returned, until stop is closed and a last pass finds nothing new; it
// fails t when a page goes back.
func follow[C int64 | string](t *testing.T, stop <-chan struct{}, next func(after C) ([]C, error)) []C {
	var (
		seen  []C
		after C
	)
	for done := false; ; {
		select {
		case <-stop:
			done = true
		default:
		}
		page, err := next(after)
		if err != nil {
			t.Error(err)
			return seen
		}
		for _, c := range page {
			if c <= after {
				t.Errorf("cursor went back: %v after %v", c, after)
			}
			after = c
		}
		seen = append(seen, page...)
		if done && len(page) == 0 {
			return seen
		}
	}
}

// TestEventOrderAcrossPlanes: a reader paging by cursor while two planes
// append at once sees every event, each once, in order: an ID is never
// committed below one already read.
func TestEventOrderAcrossPlanes(t *testing.T) {
	stores := planes(t, 3)
	_, ctx := newTenant(t, stores[0])
	stop := make(chan struct{})
	var read []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		read = follow(t, stop, func(after string) ([]string, error) {
			evs, _, err := stores[2].ListEvents(ctx, store.EventQuery{After: after, Limit: store.MaxLimit})
			out := make([]string, len(evs))
			for i, e := range evs {
				out[i] = e.ID
			}
			return out, err
		})
	}()
	var (
		mu       sync.Mutex
		appended []string
	)
	race(stores[:2], 4, func(s *Store, _ int) {
		for range 50 {
			e := store.Event{Type: "race", Message: "m"}
			if err := s.AppendEvent(ctx, &e); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			appended = append(appended, e.ID)
			mu.Unlock()
		}
	})
	close(stop)
	<-done
	slices.Sort(appended)
	if !slices.Equal(appended, read) {
		t.Errorf("the reader read %d events of the %d appended, or not in order", len(read), len(appended))
	}
}

// TestRevisionsAcrossPlanes: a reader following SandboxesSince while two
// planes update sandboxes at once ends with every record's last revision:
// none is committed below a revision already read.
func TestRevisionsAcrossPlanes(t *testing.T) {
	stores := planes(t, 3)
	_, ctx := newTenant(t, stores[0])
	sbs := make([]*store.Sandbox, 4)
	for i := range sbs {
		sbs[i] = &store.Sandbox{State: api.StateRunning, Template: "host", Driver: "process"}
		if err := stores[0].CreateSandbox(ctx, sbs[i]); err != nil {
			t.Fatal(err)
		}
	}
	last := map[string]int64{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		follow(t, stop, func(after int64) ([]int64, error) {
			got, err := stores[2].SandboxesSince(system(), after)
			out := make([]int64, len(got))
			for i, sb := range got {
				last[sb.ID], out[i] = sb.Rev, sb.Rev
			}
			return out, err
		})
	}()
	race(stores[:2], 4, func(s *Store, i int) {
		for n := range 25 {
			if _, err := s.UpdateSandbox(ctx, sbs[(i+n)%len(sbs)].ID, func(sb *store.Sandbox) error {
				sb.Error = fmt.Sprint(n)
				return nil
			}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	close(stop)
	<-done
	for _, sb := range sbs {
		got, err := stores[0].GetSandbox(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last[sb.ID] != got.Rev {
			t.Errorf("sandbox %s: the reader's last revision %d, the record's %d", sb.ID, last[sb.ID], got.Rev)
		}
	}
}

// TestOpenMigratesOnce: planes opening a new database at once migrate it
// once: each opens, and each migration is recorded once.
func TestOpenMigratesOnce(t *testing.T) {
	dsn := testutil.PostgresURL(t)
	const n = 6
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	ms, err := store.ReadMigrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var recorded, versions int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := stores[0].pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&recorded, &versions); err != nil {
		t.Fatal(err)
	}
	if recorded != len(ms) || versions != len(ms) {
		t.Errorf("schema_migrations holds %d rows of %d versions; want %d, each once", recorded, versions, len(ms))
	}
}
