package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// testNodes: a node's row round trips; its times are the store's, not
// the caller's; a heartbeat writes the load and never the state, so a
// drained node stays draining through heartbeats and a new registration;
// a removed node is not made again by its heartbeat; reads are an
// admin's, the node's own writes the system's.
func testNodes(t *testing.T, s store.Store) {
	ctx := system()
	long := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
	in := store.Node{Name: "b-node", Advertise: "http://10.0.0.2:8080", Drivers: []string{"namespace", "process"},
		Labels: map[string]string{"zone": "a"}, Load: store.NodeLoad{CPUs: 4, MemoryBytes: 8 << 30},
		State: store.NodeDraining, StartedAt: long, HeartbeatAt: long} // times and state the store ignores
	before := time.Now().Add(-time.Minute)
	got, err := s.RegisterNode(ctx, in)
	if err != nil {
		t.Fatalf("RegisterNode: %v", err)
	}
	if got.State != store.NodeActive || got.HeartbeatAt.Before(before) || got.StartedAt.Before(before) || got.Lost() {
		t.Errorf("a new node's row = %+v; want active, started and beating now on the store's clock", got)
	}
	want := in
	want.State, want.StartedAt, want.HeartbeatAt = store.NodeActive, got.StartedAt, got.HeartbeatAt
	ignoreAge := cmpopts.IgnoreFields(store.Node{}, "HeartbeatAge")
	if diff := cmp.Diff(&want, got, ignoreAge); diff != "" {
		t.Errorf("RegisterNode (-want +got):\n%s", diff)
	}
	if g, err := s.GetNode(ctx, in.Name); err != nil || !cmp.Equal(got, g, ignoreAge) {
		t.Errorf("GetNode = %+v, %v; want %+v", g, err, got)
	}
	if _, err := s.RegisterNode(ctx, store.Node{Name: "a-node", Advertise: "http://10.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListNodes(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "a-node" || list[1].Name != "b-node" {
		t.Fatalf("ListNodes = %v, %v; want a-node, b-node", list, err)
	}
	if list[0].Drivers == nil || len(list[0].Drivers) != 0 || list[0].Labels != nil {
		t.Errorf("a node registered with no drivers nor labels reads back %+v; want drivers [], labels nil", list[0])
	}

	load := store.NodeLoad{CPUs: 4, MemoryBytes: 8 << 30, CommittedMemoryBytes: 1 << 30, Running: 3}
	hb, err := s.HeartbeatNode(ctx, in.Name, load)
	if err != nil || hb.Load != load || hb.HeartbeatAt.Before(got.HeartbeatAt) {
		t.Errorf("HeartbeatNode = %+v, %v; want load %+v, a heartbeat no older than the last", hb, err, load)
	}

	member := as("t", api.RoleMember)
	deadline := time.Now().Add(10 * time.Minute)
	d, err := s.DrainNode(as("t", api.RoleAdmin), in.Name, &deadline)
	if err != nil || d.State != store.NodeDraining || d.DrainDeadline == nil || !d.DrainDeadline.Equal(store.Time(deadline)) {
		t.Fatalf("DrainNode = %+v, %v; want draining until %v", d, err, store.Time(deadline))
	}
	if hb, err := s.HeartbeatNode(ctx, in.Name, load); err != nil || hb.State != store.NodeDraining || hb.DrainDeadline == nil {
		t.Errorf("a drained node's heartbeat = %+v, %v; want it still draining, its deadline kept", hb, err)
	}
	if r, err := s.RegisterNode(ctx, in); err != nil || r.State != store.NodeDraining || r.DrainDeadline == nil {
		t.Errorf("a drained node registering again = %+v, %v; want it still draining, its deadline kept", r, err)
	}
	if d, err := s.DrainNode(ctx, in.Name, nil); err != nil || d.State != store.NodeDraining || d.DrainDeadline != nil {
		t.Errorf("DrainNode again without a deadline = %+v, %v; want draining with none", d, err)
	}
	if _, err := s.DrainNode(ctx, in.Name, &deadline); err != nil {
		t.Fatal(err)
	}
	if a, err := s.ActivateNode(as("t", api.RoleAdmin), in.Name); err != nil || a.State != store.NodeActive || a.DrainDeadline != nil {
		t.Errorf("ActivateNode = %+v, %v; want active, its deadline gone", a, err)
	}
	if hb, err := s.HeartbeatNode(ctx, in.Name, load); err != nil || hb.State != store.NodeActive {
		t.Errorf("an activated node's heartbeat = %+v, %v; want it active", hb, err)
	}
	_, err = s.ActivateNode(member, in.Name)
	wantErr(t, "a member activates a node", err, errdefs.ErrForbidden, "admin_required")
	_, err = s.ActivateNode(ctx, "nobody")
	wantErr(t, "ActivateNode of a node never registered", err, errdefs.ErrNotFound, "node_not_found")

	if err := s.LeaveNode(ctx, in.Name); err != nil {
		t.Fatal(err)
	}
	if n, err := s.GetNode(ctx, in.Name); err != nil || !n.Lost() {
		t.Errorf("a node that left = %+v, %v; want it lost at once", n, err)
	}
	if hb, err := s.HeartbeatNode(ctx, in.Name, load); err != nil || hb.Lost() {
		t.Errorf("the heartbeat of a node that left = %+v, %v; want it alive again", hb, err)
	}
	wantErr(t, "LeaveNode of a node never registered", s.LeaveNode(ctx, "nobody"), errdefs.ErrNotFound, "node_not_found")
	wantErr(t, "an admin's LeaveNode", s.LeaveNode(as("t", api.RoleAdmin), in.Name), errdefs.ErrForbidden, "system_only")
	_, err = s.HeartbeatNode(ctx, "nobody", load)
	wantErr(t, "HeartbeatNode of a node never registered", err, errdefs.ErrNotFound, "node_not_found")
	_, err = s.DrainNode(ctx, "nobody", nil)
	wantErr(t, "DrainNode of a node never registered", err, errdefs.ErrNotFound, "node_not_found")
	if err := s.DeleteNode(ctx, "a-node"); err != nil {
		t.Fatal(err)
	}
	_, err = s.HeartbeatNode(ctx, "a-node", load)
	wantErr(t, "HeartbeatNode of a removed node", err, errdefs.ErrNotFound, "node_not_found")
	_, err = s.GetNode(ctx, "a-node")
	wantErr(t, "GetNode of a removed node", err, errdefs.ErrNotFound, "node_not_found")
	wantErr(t, "DeleteNode again", s.DeleteNode(ctx, "a-node"), errdefs.ErrNotFound, "node_not_found")

	wantErr(t, "RegisterNode without a name", func() error { _, err := s.RegisterNode(ctx, store.Node{}); return err }(),
		errdefs.ErrInvalid, "invalid_node")
	admin := as("t", api.RoleAdmin)
	if _, err := s.ListNodes(admin); err != nil {
		t.Errorf("an admin lists nodes: %v", err)
	}
	_, err = s.ListNodes(member)
	wantErr(t, "a member lists nodes", err, errdefs.ErrForbidden, "admin_required")
	_, err = s.GetNode(member, in.Name)
	wantErr(t, "a member reads a node", err, errdefs.ErrForbidden, "admin_required")
	_, err = s.DrainNode(member, in.Name, nil)
	wantErr(t, "a member drains a node", err, errdefs.ErrForbidden, "admin_required")
	_, err = s.RegisterNode(admin, in)
	wantErr(t, "an admin registers a node", err, errdefs.ErrForbidden, "system_only")
	_, err = s.HeartbeatNode(admin, in.Name, load)
	wantErr(t, "an admin heartbeats a node", err, errdefs.ErrForbidden, "system_only")
	_, err = s.ListNodes(context.Background())
	wantErr(t, "ListNodes without principal", err, errdefs.ErrForbidden, "no_tenant")
}

// testNodeAge: a node's age is measured on the store's clock from its
// last heartbeat: it grows while the node is silent and falls back with
// its next heartbeat.
func testNodeAge(t *testing.T, s store.Store) {
	ctx := system()
	if _, err := s.RegisterNode(ctx, store.Node{Name: "n", Advertise: "http://n"}); err != nil {
		t.Fatal(err)
	}
	const silence = 300 * time.Millisecond
	time.Sleep(silence)
	n, err := s.GetNode(ctx, "n")
	if err != nil || n.HeartbeatAge < silence || n.HeartbeatAge > silence+5*time.Second {
		t.Fatalf("after %v of silence, GetNode = %+v, %v; want an age of about that", silence, n, err)
	}
	if n, err = s.HeartbeatNode(ctx, "n", store.NodeLoad{}); err != nil || n.HeartbeatAge >= silence {
		t.Errorf("right after a heartbeat, the age is %v, %v; want below %v", n.HeartbeatAge, err, silence)
	}
	if l, err := s.ListNodes(ctx); err != nil || len(l) != 1 || l[0].HeartbeatAge >= silence || l[0].Lost() {
		t.Errorf("ListNodes after a heartbeat = %+v, %v; want n, fresh, not lost", l, err)
	}
}
