package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

func testCountSandboxes(t *testing.T, s store.Store) {
	a, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	none, err := s.CountSandboxes(system())
	if err != nil || len(none) != 0 {
		t.Fatalf("CountSandboxes of an empty store = %v, %v; want none", none, err)
	}
	newSandbox(t, s, ctxA, nil)
	newSandbox(t, s, ctxB, nil)
	for _, sb := range []*store.Sandbox{
		{State: api.StateStopped, Driver: "process"},
		{State: api.StateRunning, Driver: "namespace"},
		{State: api.StateDestroyed, Driver: "namespace"},
	} {
		sb.TenantID = a.ID
		if err := s.CreateSandbox(system(), sb); err != nil {
			t.Fatalf("CreateSandbox(%s on %s): %v", sb.State, sb.Driver, err)
		}
	}
	got, err := s.CountSandboxes(system())
	if err != nil {
		t.Fatalf("CountSandboxes: %v", err)
	}
	want := []store.SandboxCount{
		{State: api.StateDestroyed, Driver: "namespace", N: 1},
		{State: api.StateRunning, Driver: "namespace", N: 1},
		{State: api.StateRunning, Driver: "process", N: 2},
		{State: api.StateStopped, Driver: "process", N: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CountSandboxes, every tenant's by state and driver (-want +got):\n%s", diff)
	}
	for name, ctx := range map[string]context.Context{"member": ctxA, "admin": as(a.ID, api.RoleAdmin)} {
		_, err := s.CountSandboxes(ctx)
		wantErr(t, "CountSandboxes as "+name, err, errdefs.ErrForbidden, "system_only")
	}
}
