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

// testTenantStates: a tenant's state changes only from the states its
// change names (409 tenant_state_conflict otherwise, with the tenant as
// it is); only admins and the system change it; its deletion record
// round-trips.
func testTenantStates(t *testing.T, s store.Store) {
	a, member := newTenant(t, s, "a")
	admin := as(ids.New(), api.RoleAdmin)
	active := []api.TenantState{api.TenantActive}

	_, err := store.TransitionTenant(member, s, a.ID, active, api.TenantSuspended, nil)
	wantErr(t, "a member suspends its tenant", err, errdefs.ErrForbidden, "admin_required")
	_, err = store.TransitionTenant(admin, s, ids.New(), active, api.TenantSuspended, nil)
	wantErr(t, "a missing tenant", err, errdefs.ErrNotFound, "tenant_not_found")
	got, err := store.TransitionTenant(admin, s, a.ID, active, api.TenantSuspended, nil)
	if err != nil || got.State != api.TenantSuspended || got.Name != a.Name {
		t.Fatalf("admin suspends: %+v, %v", got, err)
	}
	got, err = store.TransitionTenant(admin, s, a.ID, active, api.TenantSuspended, nil)
	wantErr(t, "suspend a suspended tenant from active", err, errdefs.ErrConflict, "tenant_state_conflict")
	if got.State != api.TenantSuspended || got.ID != a.ID {
		t.Errorf("the conflict's tenant = %+v, want it as it is", got)
	}
	_, err = s.UpdateTenant(admin, a.ID, func(t *store.Tenant) error { t.State = "gone"; return nil })
	wantErr(t, "an unknown state", err, errdefs.ErrInvalid, "invalid_tenant_state")

	started := time.Date(2025, 3, 4, 5, 6, 7, 891234567, time.FixedZone("X", 7200))
	finished := started.Add(time.Minute)
	d := &api.TenantDeletion{StartedAt: started, By: "key1", ByTenant: "admins", Step: api.DeleteStepDone,
		Removed: api.TenantRemoved{Keys: 2, Sandboxes: 3, Events: 40}, FinishedAt: &finished, Error: "x"}
	if _, err := store.TransitionTenant(system(), s, a.ID, []api.TenantState{api.TenantSuspended}, api.TenantDeleted,
		func(t *store.Tenant) { t.Deletion = d }); err != nil {
		t.Fatal(err)
	}
	back, err := s.GetTenant(admin, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := *d
	want.StartedAt, want.FinishedAt = store.Time(started), store.TimePtr(&finished)
	if diff := cmp.Diff(&want, back.Deletion); diff != "" || back.State != api.TenantDeleted {
		t.Errorf("deletion read back, state %s (-want +got):\n%s", back.State, diff)
	}
	ts, err := s.ListTenants(system())
	if err != nil || len(ts) != 1 || ts[0].State != api.TenantDeleted || ts[0].Deletion == nil {
		t.Errorf("ListTenants = %+v, %v; want the deleted tenant with its record", ts, err)
	}
}

// testTenantNotActive: nothing new reaches a tenant that is not active,
// in the write that would add it (403 tenant_suspended, tenant_deleted);
// what it has stays readable and changeable; LookupKey tells its key's
// tenant's state; an event is refused only once the tenant is deleted.
func testTenantNotActive(t *testing.T, s store.Store) {
	a, ctx := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	k := newKey(a.ID, "k", api.RoleMember)
	if err := s.CreateKey(system(), k); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, s, ctx, nil)
	creates := func(ctx context.Context, tenantID string) map[string]error {
		return map[string]error{
			"key":      s.CreateKey(system(), newKey(tenantID, "k2", api.RoleMember)),
			"sandbox":  s.CreateSandbox(ctx, &store.Sandbox{State: api.StateCreating, Template: "host", Driver: "process"}),
			"snapshot": s.CreateSnapshot(ctx, &store.Snapshot{SandboxID: sb.ID, Template: "host", Driver: "process"}),
			"template": s.CreateTemplate(ctx, &store.Template{Name: "t" + ids.Token(4), Source: "x", Digest: "sha256:" + hex64('a'), Layers: []string{"sha256:" + hex64('1')}}),
			"volume":   s.CreateVolume(ctx, &store.Volume{Name: "v" + ids.Token(4), SizeMB: 1}),
			"secret":   s.CreateSecret(ctx, newSecret("S"+ids.Token(4))),
			"app":      s.CreateApp(ctx, &store.App{Name: "app-" + ids.Token(4), Preset: "static"}),
		}
	}
	for _, tc := range []struct {
		state api.TenantState
		code  string
	}{{api.TenantSuspended, "tenant_suspended"}, {api.TenantDeleting, "tenant_deleted"}} {
		state, code := tc.state, tc.code
		if _, err := s.UpdateTenant(system(), a.ID, func(t *store.Tenant) error { t.State = state; return nil }); err != nil {
			t.Fatal(err)
		}
		for what, err := range creates(ctx, a.ID) {
			wantErr(t, what+" of a "+string(state)+" tenant", err, errdefs.ErrForbidden, code)
		}
		if k, err := s.LookupKey(system(), k.ID); err != nil || k.TenantState != state {
			t.Errorf("LookupKey when %s: state %q, %v", state, k.TenantState, err)
		}
		if _, err := store.Transition(ctx, s, sb.ID, []api.SandboxState{api.StateRunning}, api.StateRunning, nil); err != nil {
			t.Errorf("a %s tenant's sandbox changes: %v", state, err)
		}
		if err := s.AppendEvent(ctx, &store.Event{Type: "x"}); err != nil {
			t.Errorf("an event of a %s tenant: %v", state, err)
		}
	}
	for what, err := range creates(ctxB, "") {
		if what != "key" && err != nil {
			t.Errorf("another tenant creates a %s: %v", what, err)
		}
	}
	if _, err := s.UpdateTenant(system(), a.ID, func(t *store.Tenant) error { t.State = api.TenantDeleted; return nil }); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "an event of a deleted tenant", s.AppendEvent(ctx, &store.Event{Type: "x"}), errdefs.ErrForbidden, "tenant_deleted")
	if _, err := s.UpdateTenant(system(), a.ID, func(t *store.Tenant) error { t.State = api.TenantActive; return nil }); err != nil {
		t.Fatal(err)
	}
	for what, err := range creates(ctx, a.ID) {
		if err != nil {
			t.Errorf("%s of an active tenant again: %v", what, err)
		}
	}
}

// testDeleteByTenant: each Delete*ByTenant is the system's alone, erases
// every row of one tenant and none of another's, and sandboxes' only
// once every one is destroyed.
func testDeleteByTenant(t *testing.T, s store.Store) {
	a, ctx := newTenant(t, s, "a")
	b, ctxB := newTenant(t, s, "b")
	fill := func(ctx context.Context, tenantID string) *store.Sandbox {
		t.Helper()
		sb := newSandbox(t, s, ctx, map[string]string{"l": "v"})
		for i := range 3 {
			if err := s.CreateKey(system(), newKey(tenantID, "k", api.RoleMember)); err != nil {
				t.Fatal(err)
			}
			for _, err := range []error{
				s.CreateSnapshot(ctx, &store.Snapshot{SandboxID: sb.ID, Template: "host", Driver: "process"}),
				s.CreateTemplate(ctx, &store.Template{Name: "t" + ids.Token(4), Source: "x", Digest: "sha256:" + hex64('a'), Layers: []string{"sha256:" + hex64('1')}}),
				s.CreateVolume(ctx, &store.Volume{Name: "v" + ids.Token(4), SizeMB: 1}),
				s.CreateSecret(ctx, newSecret("S"+ids.Token(4))),
				s.CreateApp(ctx, &store.App{Name: "app-" + ids.Token(4), Preset: "static"}),
				s.AppendEvent(ctx, &store.Event{SandboxID: sb.ID, Type: "x"}),
				s.AppendEvent(ctx, &store.Event{Type: "y"}),
			} {
				if err != nil {
					t.Fatalf("fill %d: %v", i, err)
				}
			}
		}
		return sb
	}
	sbA := fill(ctx, a.ID)
	fill(ctxB, b.ID)
	type eraser struct {
		name string
		fn   func(context.Context, string) (int, error)
		want int
	}
	erasers := []eraser{
		{"keys", func(ctx context.Context, id string) (int, error) {
			ks, err := s.DeleteKeysByTenant(ctx, id)
			return len(ks), err
		}, 3},
		{"apps", s.DeleteAppsByTenant, 3},
		{"templates", s.DeleteTemplatesByTenant, 3},
		{"volumes", s.DeleteVolumesByTenant, 3},
		{"secrets", s.DeleteSecretsByTenant, 3},
		{"sandboxes", s.DeleteSandboxesByTenant, 1},
		{"events", s.DeleteEventsByTenant, 3},
	}
	for _, e := range erasers {
		for _, who := range []context.Context{ctx, as(a.ID, api.RoleAdmin), context.Background()} {
			if _, err := e.fn(who, a.ID); !errdefs.HasCode(err, "system_only") && !errdefs.HasCode(err, "no_tenant") {
				t.Errorf("%s erased by a key: %v", e.name, err)
			}
		}
	}
	_, err := s.DeleteSandboxesByTenant(system(), a.ID)
	wantErr(t, "sandboxes erased while one runs", err, errdefs.ErrConflict, "sandbox_not_destroyed")
	if _, err := store.Transition(ctx, s, sbA.ID, []api.SandboxState{api.StateRunning}, api.StateDestroyed, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range erasers {
		n, err := e.fn(system(), a.ID)
		if err != nil || n != e.want {
			t.Errorf("%s erased: %d, %v; want %d", e.name, n, err, e.want)
		}
		if n, err := e.fn(system(), a.ID); err != nil || n != 0 {
			t.Errorf("%s erased again: %d, %v; want 0", e.name, n, err)
		}
	}
	// The sandbox's three events went with it; the tenant's three others
	// with the events.
	keys, _ := s.ListKeys(ctx)
	sbs, _, _ := s.ListSandboxes(ctx, store.ListOptions{})
	apps, _ := s.ListApps(ctx)
	tmpls, _ := s.ListTemplates(ctx)
	vols, _ := s.ListVolumes(ctx)
	secs, _ := s.ListSecrets(ctx)
	evs, _, _ := s.ListEvents(ctx, store.EventQuery{})
	snaps, _ := s.ListSnapshots(ctx, store.SnapshotQuery{})
	if n := len(keys) + len(sbs) + len(apps) + len(tmpls) + len(vols) + len(secs) + len(evs); n != 0 || len(snaps) != 3 {
		t.Errorf("tenant a keeps %d rows and %d snapshots, want none but the snapshots (the sandbox service deletes those with their files)", n, len(snaps))
	}
	keysB, _ := s.ListKeys(ctxB)
	sbsB, _, _ := s.ListSandboxes(ctxB, store.ListOptions{})
	appsB, _ := s.ListApps(ctxB)
	tmplsB, _ := s.ListTemplates(ctxB)
	volsB, _ := s.ListVolumes(ctxB)
	secsB, _ := s.ListSecrets(ctxB)
	evsB, _, _ := s.ListEvents(ctxB, store.EventQuery{})
	if len(keysB) != 3 || len(sbsB) != 1 || len(appsB) != 3 || len(tmplsB) != 3 || len(volsB) != 3 || len(secsB) != 3 || len(evsB) != 6 {
		t.Errorf("tenant b lost rows: %d keys %d sandboxes %d apps %d templates %d volumes %d secrets %d events",
			len(keysB), len(sbsB), len(appsB), len(tmplsB), len(volsB), len(secsB), len(evsB))
	}
}
