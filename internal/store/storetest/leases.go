package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// testLeases: a lease held by A is not taken by B before its TTL ends,
// and is after; A's renewals keep it and its AcquiredAt; a release is the
// holder's alone; of many racing for a free lease exactly one wins.
func testLeases(t *testing.T, s store.Store) {
	ctx := system()
	const ttl = 800 * time.Millisecond
	a, err := s.AcquireLease(ctx, "fleet", "A", ttl)
	if err != nil || !a.HeldBy("A") || !a.ExpiresAt.After(a.AcquiredAt) {
		t.Fatalf("A acquires a free lease: %+v, %v", a, err)
	}
	if b, err := s.AcquireLease(ctx, "fleet", "B", ttl); err != nil || b.HeldBy("B") || !b.HeldBy("A") {
		t.Errorf("B asks for A's lease before its TTL: %+v, %v; want it still A's", b, err)
	}
	time.Sleep(ttl / 2)
	r, err := s.AcquireLease(ctx, "fleet", "A", ttl)
	if err != nil || !r.HeldBy("A") || !r.AcquiredAt.Equal(a.AcquiredAt) || !r.ExpiresAt.After(a.ExpiresAt) {
		t.Errorf("A renews: %+v, %v; want A's, acquired at %v, expiring after %v", r, err, a.AcquiredAt, a.ExpiresAt)
	}
	time.Sleep(ttl / 2)
	if b, err := s.AcquireLease(ctx, "fleet", "B", ttl); err != nil || !b.HeldBy("A") {
		t.Errorf("B asks after A's renewal, before its new TTL: %+v, %v; want it still A's", b, err)
	}
	if l, err := s.ListLeases(as("t", api.RoleAdmin)); err != nil || len(l) != 1 || !l[0].HeldBy("A") {
		t.Errorf("ListLeases = %+v, %v; want fleet held by A", l, err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	if l, err := s.ListLeases(ctx); err != nil || len(l) != 0 {
		t.Errorf("ListLeases after the TTL = %+v, %v; want none", l, err)
	}
	b, err := s.AcquireLease(ctx, "fleet", "B", ttl)
	if err != nil || !b.HeldBy("B") || !b.AcquiredAt.After(a.AcquiredAt) {
		t.Fatalf("B asks after A's TTL: %+v, %v; want it B's, acquired anew", b, err)
	}

	if err := s.ReleaseLease(ctx, "fleet", "A"); err != nil {
		t.Fatal(err)
	}
	if l, err := s.AcquireLease(ctx, "fleet", "A", ttl); err != nil || !l.HeldBy("B") {
		t.Errorf("after A's release of B's lease, A asks: %+v, %v; want it still B's", l, err)
	}
	if err := s.ReleaseLease(ctx, "fleet", "B"); err != nil {
		t.Fatal(err)
	}
	if l, err := s.AcquireLease(ctx, "fleet", "A", ttl); err != nil || !l.HeldBy("A") {
		t.Errorf("after B's release, A asks: %+v, %v; want it A's at once", l, err)
	}

	// Eight holders race for a free lease: one wins, and all see it.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		holders = map[string]int{}
	)
	for i := range 8 {
		wg.Go(func() {
			l, err := s.AcquireLease(ctx, "race", string(rune('a'+i)), time.Minute)
			if err != nil {
				t.Errorf("racing acquire: %v", err)
				return
			}
			mu.Lock()
			holders[l.Holder]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(holders) != 1 {
		t.Errorf("8 racing for a free lease saw holders %v; want one", holders)
	}

	_, err = s.AcquireLease(ctx, "fleet", "A", time.Millisecond)
	wantErr(t, "a lease for 1 ms", err, errdefs.ErrInvalid, "invalid_lease")
	_, err = s.AcquireLease(ctx, "", "A", ttl)
	wantErr(t, "a lease without a name", err, errdefs.ErrInvalid, "invalid_lease")
	_, err = s.AcquireLease(as("t", api.RoleAdmin), "fleet", "A", ttl)
	wantErr(t, "an admin acquires a lease", err, errdefs.ErrForbidden, "system_only")
	wantErr(t, "an admin releases a lease", s.ReleaseLease(as("t", api.RoleAdmin), "fleet", "A"), errdefs.ErrForbidden, "system_only")
}
