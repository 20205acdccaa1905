package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

func testSandboxRoundTrip(t *testing.T, s store.Store) {
	a, ctx := newTenant(t, s, "a")
	tokyo := time.FixedZone("JST", 9*3600)
	expires := time.Date(2030, 12, 31, 23, 59, 59, 999999999, tokyo)
	sb := &store.Sandbox{
		ID:        ids.New(),
		TenantID:  "someone-else", // replaced by the caller's tenant
		State:     api.StateCreating,
		Template:  "host",
		Driver:    "namespace",
		Env:       map[string]string{"PATH": "/usr/bin", "EMPTY": "", "UNICODE": "héllo ✓"},
		Cwd:       "/workspace",
		Limits:    api.Limits{MemoryMB: 512, CPU: 1.5, Pids: 64},
		TimeoutS:  300,
		Labels:    map[string]string{"app": "web", "owner": "ana"},
		Handle:    []byte(`{"v":1,"pid":42}`),
		Error:     "",
		Node:      "node-a",
		CreatedAt: time.Date(2025, 3, 4, 5, 6, 7, 891011121, tokyo),
		UpdatedAt: time.Date(2025, 3, 4, 5, 6, 8, 1, tokyo),
		ExpiresAt: &expires,
	}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	if sb.TenantID != a.ID {
		t.Errorf("TenantID = %q, want the caller's %q", sb.TenantID, a.ID)
	}
	if !sb.CreatedAt.Equal(time.Date(2025, 3, 4, 5, 6, 7, 891011000, tokyo)) || sb.CreatedAt.Location() != time.UTC {
		t.Errorf("CreateSandbox left CreatedAt %v, want it in UTC to the microsecond", sb.CreatedAt)
	}

	got, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("GetSandbox (-created +got):\n%s", diff)
	}
	for name, tm := range map[string]time.Time{"CreatedAt": got.CreatedAt, "UpdatedAt": got.UpdatedAt, "ExpiresAt": *got.ExpiresAt} {
		if tm.Location() != time.UTC {
			t.Errorf("%s in %v, want UTC", name, tm.Location())
		}
	}
	list, _, err := s.ListSandboxes(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}
	if diff := cmp.Diff([]*store.Sandbox{sb}, list); diff != "" {
		t.Errorf("ListSandboxes (-created +got):\n%s", diff)
	}
}

func testSandboxDefaults(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	before := store.Time(time.Now())
	sb := &store.Sandbox{State: api.StateCreating, Env: map[string]string{}, Labels: map[string]string{}, Handle: []byte{}}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	if !ids.Valid(sb.ID) {
		t.Errorf("assigned ID %q is not an id", sb.ID)
	}
	if sb.CreatedAt.Before(before) || sb.UpdatedAt.Before(before) || sb.CreatedAt.After(time.Now()) {
		t.Errorf("zero times became %v, %v; want about now", sb.CreatedAt, sb.UpdatedAt)
	}
	if sb.Env != nil || sb.Labels != nil || sb.Handle != nil {
		t.Errorf("empty Env, Labels, Handle kept as %#v, %#v, %#v; want nil", sb.Env, sb.Labels, sb.Handle)
	}
	got, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("GetSandbox (-created +got):\n%s", diff)
	}
	wantErr(t, "sandbox without state", s.CreateSandbox(ctx, &store.Sandbox{}), errdefs.ErrInvalid, "invalid_sandbox")
}

func testSandboxConflict(t *testing.T, s store.Store) {
	_, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	sb := newSandbox(t, s, ctxA, map[string]string{"x": "1"})
	again := &store.Sandbox{ID: sb.ID, State: api.StateRunning, Labels: map[string]string{"y": "2"}}
	wantErr(t, "duplicate id", s.CreateSandbox(ctxA, again), errdefs.ErrConflict, "sandbox_exists")
	wantErr(t, "duplicate id in another tenant", s.CreateSandbox(ctxB, again), errdefs.ErrConflict, "sandbox_exists")
	got, err := s.GetSandbox(ctxA, sb.ID)
	if err != nil {
		t.Fatalf("GetSandbox: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("sandbox after failed duplicates (-want +got):\n%s", diff)
	}
}

func testSandboxIsolation(t *testing.T, s store.Store) {
	_, ctxA := newTenant(t, s, "a")
	b, ctxB := newTenant(t, s, "b")
	sb := newSandbox(t, s, ctxA, map[string]string{"app": "secret"})
	adminB := as(b.ID, api.RoleAdmin)

	for name, ctx := range map[string]context.Context{"member of B": ctxB, "admin of B": adminB} {
		_, err := s.GetSandbox(ctx, sb.ID)
		wantErr(t, name+" gets A's sandbox", err, errdefs.ErrNotFound, "sandbox_not_found")
		for _, opts := range []store.ListOptions{{}, {Labels: map[string]string{"app": "secret"}}, {State: api.StateRunning}} {
			list, next, err := s.ListSandboxes(ctx, opts)
			if err != nil || len(list) != 0 || next != "" {
				t.Errorf("%s lists %+v: %d sandboxes, cursor %q, %v; want none", name, opts, len(list), next, err)
			}
		}
		called := false
		_, err = s.UpdateSandbox(ctx, sb.ID, func(x *store.Sandbox) error {
			called = true
			x.State = api.StateDestroyed
			return nil
		})
		wantErr(t, name+" updates A's sandbox", err, errdefs.ErrNotFound, "sandbox_not_found")
		if called {
			t.Errorf("%s: UpdateSandbox called fn on another tenant's sandbox", name)
		}
		wantErr(t, name+" deletes A's sandbox", s.DeleteSandbox(ctx, sb.ID), errdefs.ErrNotFound, "sandbox_not_found")
	}

	got, err := s.GetSandbox(ctxA, sb.ID)
	if err != nil {
		t.Fatalf("A gets its sandbox: %v", err)
	}
	if diff := cmp.Diff(sb, got); diff != "" {
		t.Errorf("A's sandbox after B's attempts (-want +got):\n%s", diff)
	}
}

func testNoPrincipal(t *testing.T, s store.Store) {
	_, ctxA := newTenant(t, s, "a")
	sb := newSandbox(t, s, ctxA, nil)
	bg := context.Background()
	const code = "no_tenant"
	wantErr(t, "CreateSandbox", s.CreateSandbox(bg, &store.Sandbox{State: api.StateRunning, TenantID: sb.TenantID}), errdefs.ErrForbidden, code)
	_, err := s.GetSandbox(bg, sb.ID)
	wantErr(t, "GetSandbox", err, errdefs.ErrForbidden, code)
	_, _, err = s.ListSandboxes(bg, store.ListOptions{})
	wantErr(t, "ListSandboxes", err, errdefs.ErrForbidden, code)
	_, err = s.UpdateSandbox(bg, sb.ID, func(*store.Sandbox) error { return nil })
	wantErr(t, "UpdateSandbox", err, errdefs.ErrForbidden, code)
	wantErr(t, "DeleteSandbox", s.DeleteSandbox(bg, sb.ID), errdefs.ErrForbidden, code)
	_, err = s.AllSandboxes(bg)
	wantErr(t, "AllSandboxes", err, errdefs.ErrForbidden, code)
	if _, err := s.GetSandbox(ctxA, sb.ID); err != nil {
		t.Errorf("sandbox gone after calls without principal: %v", err)
	}
}

func testAllSandboxes(t *testing.T, s store.Store) {
	a, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	a1 := newSandbox(t, s, ctxA, nil)
	b1 := newSandbox(t, s, ctxB, nil)
	a2 := &store.Sandbox{State: api.StateStopped, TenantID: a.ID}
	if err := s.CreateSandbox(system(), a2); err != nil {
		t.Fatalf("system creates a sandbox for A: %v", err)
	}
	wantErr(t, "system creates a sandbox without a tenant", s.CreateSandbox(system(), &store.Sandbox{State: api.StateRunning}), errdefs.ErrInvalid, "")

	all, err := s.AllSandboxes(system())
	if err != nil {
		t.Fatalf("AllSandboxes: %v", err)
	}
	if diff := cmp.Diff(sortedIDs(true, a1, b1, a2), idsOf(all)); diff != "" {
		t.Errorf("AllSandboxes, oldest first (-want +got):\n%s", diff)
	}
	running, err := s.AllSandboxes(system(), api.StateRunning, api.StateCreating)
	if err != nil {
		t.Fatalf("AllSandboxes(running, creating): %v", err)
	}
	if diff := cmp.Diff(sortedIDs(true, a1, b1), idsOf(running)); diff != "" {
		t.Errorf("AllSandboxes(running, creating) (-want +got):\n%s", diff)
	}
	for name, ctx := range map[string]context.Context{"member": ctxA, "admin": as(a.ID, api.RoleAdmin)} {
		_, err := s.AllSandboxes(ctx)
		wantErr(t, "AllSandboxes as "+name, err, errdefs.ErrForbidden, "system_only")
		_, err = s.SandboxesSince(ctx, 0)
		wantErr(t, "SandboxesSince as "+name, err, errdefs.ErrForbidden, "system_only")
	}

	// What changed since a revision, in the order written, whatever the
	// tenant; and in the given states.
	mark := max(a1.Rev, b1.Rev, a2.Rev)
	if _, err := s.UpdateSandbox(system(), a1.ID, func(sb *store.Sandbox) error { sb.State = api.StatePaused; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSandbox(system(), b1.ID, func(sb *store.Sandbox) error { sb.Error = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	since, err := s.SandboxesSince(system(), mark)
	if err != nil {
		t.Fatalf("SandboxesSince: %v", err)
	}
	if diff := cmp.Diff([]string{a1.ID, b1.ID}, idsOf(since)); diff != "" {
		t.Errorf("SandboxesSince the creates, in the order written (-want +got):\n%s", diff)
	}
	if len(since) == 2 && since[0].Rev >= since[1].Rev {
		t.Errorf("revisions %d then %d; want them growing in the order written", since[0].Rev, since[1].Rev)
	}
	paused, err := s.SandboxesSince(system(), mark, api.StatePaused)
	if err != nil || len(paused) != 1 || paused[0].ID != a1.ID {
		t.Errorf("SandboxesSince(paused) = %v, %v; want %s alone", idsOf(paused), err, a1.ID)
	}
	if none, err := s.SandboxesSince(system(), since[len(since)-1].Rev); err != nil || len(none) != 0 {
		t.Errorf("SandboxesSince the last write = %v, %v; want nothing", idsOf(none), err)
	}
	if _, err := s.UpdateSandbox(system(), a1.ID, func(sb *store.Sandbox) error { sb.State = api.StateRunning; return nil }); err != nil {
		t.Fatal(err)
	}

	// The system reaches any tenant's sandbox by id, as recovery does.
	got, err := s.UpdateSandbox(system(), b1.ID, func(sb *store.Sandbox) error {
		sb.State = api.StateFailed
		sb.Error = "lost on restart"
		return nil
	})
	if err != nil {
		t.Fatalf("system updates B's sandbox: %v", err)
	}
	if got.TenantID != b1.TenantID || got.State != api.StateFailed {
		t.Errorf("system update gave %+v", got)
	}
	if _, err := s.GetSandbox(ctxB, b1.ID); err != nil {
		t.Errorf("B gets its sandbox after the system's update: %v", err)
	}
}

func testDeleteSandbox(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	labels := map[string]string{"gc": "me"}
	sb := newSandbox(t, s, ctx, labels)
	keep := newSandbox(t, s, ctx, nil)
	if err := s.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	_, err := s.GetSandbox(ctx, sb.ID)
	wantErr(t, "GetSandbox after delete", err, errdefs.ErrNotFound, "sandbox_not_found")
	wantErr(t, "second delete", s.DeleteSandbox(ctx, sb.ID), errdefs.ErrNotFound, "sandbox_not_found")
	list, _, err := s.ListSandboxes(ctx, store.ListOptions{Labels: labels})
	if err != nil || len(list) != 0 {
		t.Errorf("list by the deleted sandbox's label: %d, %v; want none", len(list), err)
	}
	list, _, err = s.ListSandboxes(ctx, store.ListOptions{})
	if err != nil {
		t.Fatalf("ListSandboxes: %v", err)
	}
	if diff := cmp.Diff([]string{keep.ID}, idsOf(list)); diff != "" {
		t.Errorf("sandboxes after delete (-want +got):\n%s", diff)
	}
	// Its labels went with it: the id can be used again with the same labels.
	again := &store.Sandbox{ID: sb.ID, State: api.StateRunning, Labels: labels}
	if err := s.CreateSandbox(ctx, again); err != nil {
		t.Errorf("re-create a deleted id: %v", err)
	}
}
