package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

// within is how soon another plane must be told of a write.
const within = time.Second

// subscribe subscribes to s's changes until t ends, and returns them.
func subscribe(t *testing.T, s *Store) <-chan store.Change {
	t.Helper()
	ch := make(chan store.Change, 1000)
	stop, err := s.Subscribe(context.Background(), func(_ context.Context, c store.Change) {
		select {
		case ch <- c:
		default:
			t.Errorf("a subscriber's buffer filled: %+v lost", c)
		}
	})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(stop)
	return ch
}

// await returns the first change of ch that is want's kind, failing t
// unless it comes within d and equals want (Err aside). Changes of other
// kinds before it are skipped.
func await(t *testing.T, ch <-chan store.Change, want store.Change, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case c := <-ch:
			if c.Kind != want.Kind {
				continue
			}
			c.Err = nil
			if c != want {
				t.Errorf("told %+v; want %+v", c, want)
			}
			return
		case <-timeout:
			t.Fatalf("not told %+v within %v", want, d)
		}
	}
}

// next fails t unless the next change of ch is want, told within a
// second: nothing came before it.
func next(t *testing.T, ch <-chan store.Change, want store.Change) {
	t.Helper()
	select {
	case c := <-ch:
		if c != want {
			t.Errorf("told %+v first; want %+v", c, want)
		}
	case <-time.After(within):
		t.Fatalf("not told %+v within %v", want, within)
	}
}

// TestChangesAcrossPlanes: each write on one plane is told to the other
// within a second, with the ids its kind names.
func TestChangesAcrossPlanes(t *testing.T) {
	stores := planes(t, 2)
	a, told := stores[0], subscribe(t, stores[1])
	tenant, ctx := newTenant(t, a)
	sb := &store.Sandbox{State: api.StateRunning, Template: "host", Driver: "process"}
	key := store.Key{ID: ids.New(), TenantID: tenant, Name: "k", Role: api.RoleMember, Prefix: "hk_", Hash: []byte("h")}
	for _, step := range []struct {
		name  string
		write func() error
		want  func() store.Change
	}{
		{"create a sandbox",
			func() error { return a.CreateSandbox(ctx, sb) },
			func() store.Change {
				return store.Change{Kind: store.ChangeSandbox, TenantID: tenant, SandboxID: sb.ID, Rev: sb.Rev}
			}},
		{"stop it",
			func() error {
				var err error
				sb, err = store.Transition(ctx, a, sb.ID, []api.SandboxState{api.StateRunning}, api.StateStopped, nil)
				return err
			},
			func() store.Change {
				return store.Change{Kind: store.ChangeSandbox, TenantID: tenant, SandboxID: sb.ID, Rev: sb.Rev}
			}},
		{"append an event",
			func() error { return a.AppendEvent(ctx, &store.Event{Type: "t", Message: "m"}) },
			func() store.Change { return store.Change{Kind: store.ChangeEvents, TenantID: tenant} }},
		{"revoke a key",
			func() error {
				if err := a.CreateKey(system(), key); err != nil {
					return err
				}
				_, err := a.DeleteKey(system(), key.ID, false)
				return err
			},
			func() store.Change { return store.Change{Kind: store.ChangeKey, TenantID: tenant, KeyID: key.ID} }},
		{"suspend the tenant",
			func() error {
				_, err := store.TransitionTenant(system(), a, tenant, []api.TenantState{api.TenantActive}, api.TenantSuspended, nil)
				return err
			},
			func() store.Change { return store.Change{Kind: store.ChangeTenant, TenantID: tenant} }},
		{"erase the sandbox",
			func() error { return a.DeleteSandbox(ctx, sb.ID) },
			func() store.Change {
				return store.Change{Kind: store.ChangeSandbox, TenantID: tenant, SandboxID: sb.ID}
			}},
	} {
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		await(t, told, step.want(), within)
	}
}

// TestNoChangeRolledBack: a write that rolls back is told to nobody. The
// revocation of the last admin key deletes it, then finds none left and
// rolls back; the event appended after it is the next thing told.
func TestNoChangeRolledBack(t *testing.T) {
	stores := planes(t, 2)
	a, told := stores[0], subscribe(t, stores[1])
	tenant, _ := newTenant(t, a)
	admin := store.Key{ID: ids.New(), TenantID: tenant, Name: "admin", Role: api.RoleAdmin, Prefix: "hk_", Hash: []byte("h")}
	if err := a.CreateKey(system(), admin); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteKey(system(), admin.ID, false); !errdefs.HasCode(err, "last_admin_key") {
		t.Fatalf("revoking the last admin key: %v; want last_admin_key", err)
	}
	if err := a.AppendEvent(system(), &store.Event{TenantID: tenant, Type: "t", Message: "after"}); err != nil {
		t.Fatal(err)
	}
	next(t, told, store.Change{Kind: store.ChangeEvents, TenantID: tenant})
}

// TestChangesAfterConnectionKilled: when the feed's connection is killed
// the feed connects again, tells ChangeResync, and then tells writes as
// before.
func TestChangesAfterConnectionKilled(t *testing.T) {
	stores := planes(t, 2)
	a, b := stores[0], stores[1]
	told := subscribe(t, b)
	tenant, ctx := newTenant(t, a)
	var killed int
	if err := a.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, feedApp).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("killed %d feed connections; want 1", killed)
	}
	await(t, told, store.Change{Kind: store.ChangeResync}, within)
	if err := a.AppendEvent(ctx, &store.Event{Type: "t", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	await(t, told, store.Change{Kind: store.ChangeEvents, TenantID: tenant}, within)
}

// TestParseChange: a kind this binary does not know is ignored; a
// payload it cannot read is a resync, since a change may be in it.
func TestParseChange(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    store.ChangeKind
	}{
		{`{"kind":"key","tenant":"t","key":"k","new":1}`, store.ChangeKey},
		{`{"kind":"node","node":"n"}`, ""},
		{`{"kind":`, store.ChangeResync},
	} {
		if got := parseChange(tc.payload); got.Kind != tc.want {
			t.Errorf("parseChange(%s): kind %q; want %q", tc.payload, got.Kind, tc.want)
		}
	}
}

// TestChangesWhileIdle: a feed with nothing to tell pings its connection
// and keeps it: no resync, and a write is told as before.
func TestChangesWhileIdle(t *testing.T) {
	idle := feedIdle
	t.Cleanup(func() { feedIdle = idle })
	feedIdle = 20 * time.Millisecond
	stores := planes(t, 2)
	a, told := stores[0], subscribe(t, stores[1])
	tenant, ctx := newTenant(t, a)
	time.Sleep(10 * feedIdle)
	if err := a.AppendEvent(ctx, &store.Event{Type: "t", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	next(t, told, store.Change{Kind: store.ChangeEvents, TenantID: tenant})
}
