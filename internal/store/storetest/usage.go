package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/store"
)

// testUsage: a tenant's usage follows every write of its sandboxes (their
// states, limits and measured disk, by create, update, SetSandboxDisk
// and delete) and counts its other resources; a node's counts the limits
// of its sandboxes that hold them (a paused one's memory and pids, not
// its CPU), with those of no node.
func testUsage(t *testing.T, s store.Store) {
	a, ctxA := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	want := func(what string, id string, w store.TenantUsage) {
		t.Helper()
		got, err := s.TenantUsage(system(), id)
		if err != nil {
			t.Fatalf("%s: TenantUsage: %v", what, err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s: usage (-want +got):\n%s", what, diff)
		}
	}
	wantNode := func(what, node string, w store.NodeUsage) {
		t.Helper()
		got, err := s.NodeUsage(system(), node)
		if err != nil || got != w {
			t.Errorf("%s: NodeUsage(%q) = %+v, %v; want %+v", what, node, got, err, w)
		}
	}
	want("a new tenant", a.ID, store.TenantUsage{})
	wantNode("no sandboxes", "n1", store.NodeUsage{})

	lim := api.Limits{MemoryMB: 256, CPU: 0.5, Pids: 64}
	mk := func(state api.SandboxState, node string, disk int64) *store.Sandbox {
		sb := &store.Sandbox{State: state, Template: "host", Driver: "process", Limits: lim, Node: node, DiskBytes: disk}
		if err := s.CreateSandbox(ctxA, sb); err != nil {
			t.Fatal(err)
		}
		return sb
	}
	run := mk(api.StateRunning, "n1", 1000)
	stopped := mk(api.StateStopped, "n1", 10)
	mk(api.StateFailed, "n2", 100)
	mk(api.StateDestroyed, "n1", 1<<20)
	old := mk(api.StateCreating, "", 0)
	newSandbox(t, s, ctxB, nil)
	want("sandboxes in each state", a.ID, store.TenantUsage{Sandboxes: 3, MemoryMB: 512, CPUMilli: 1000, Pids: 128, SandboxDiskBytes: 1110})
	wantNode("n1 with the sandboxes of no node", "n1", store.NodeUsage{MemoryMB: 512, CPUMilli: 1000, Pids: 128})
	wantNode("n2: its failed sandbox holds nothing; the one of no node counts", "n2", store.NodeUsage{MemoryMB: 256, CPUMilli: 500, Pids: 64})

	// A stop keeps its place and files, not its limits; a start takes
	// them again with new ones; a destroy ends its share.
	if _, err := s.UpdateSandbox(ctxA, run.ID, func(sb *store.Sandbox) error { sb.State = api.StateStopped; return nil }); err != nil {
		t.Fatal(err)
	}
	want("after a stop", a.ID, store.TenantUsage{Sandboxes: 3, MemoryMB: 256, CPUMilli: 500, Pids: 64, SandboxDiskBytes: 1110})
	if _, err := s.UpdateSandbox(ctxA, stopped.ID, func(sb *store.Sandbox) error {
		sb.State, sb.Limits = api.StateRunning, api.Limits{MemoryMB: 1024, CPU: 2, Pids: 8}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want("after a start", a.ID, store.TenantUsage{Sandboxes: 3, MemoryMB: 1280, CPUMilli: 2500, Pids: 72, SandboxDiskBytes: 1110})
	// A pause keeps its memory and pids, not its CPU; a resume takes it
	// again.
	for _, st := range []api.SandboxState{api.StatePaused, api.StateRunning} {
		if _, err := s.UpdateSandbox(ctxA, stopped.ID, func(sb *store.Sandbox) error { sb.State = st; return nil }); err != nil {
			t.Fatal(err)
		}
		cpu := 2500
		if st == api.StatePaused {
			cpu = 500
		}
		want("after a "+string(st), a.ID, store.TenantUsage{Sandboxes: 3, MemoryMB: 1280, CPUMilli: cpu, Pids: 72, SandboxDiskBytes: 1110})
		wantNode("n1 with a sandbox "+string(st), "n1", store.NodeUsage{MemoryMB: 1024 + 256, CPUMilli: cpu, Pids: 72})
	}
	// A recovery that claims a record of no node moves its share.
	if _, err := s.UpdateSandbox(ctxA, old.ID, func(sb *store.Sandbox) error { sb.Node = "n2"; return nil }); err != nil {
		t.Fatal(err)
	}
	wantNode("n1 once the old record is n2's", "n1", store.NodeUsage{MemoryMB: 1024, CPUMilli: 2000, Pids: 8})
	wantNode("n2 with it", "n2", store.NodeUsage{MemoryMB: 256, CPUMilli: 500, Pids: 64})
	wantNode("no node's, once claimed", "", store.NodeUsage{})

	// A measurement moves the disk only; the record is otherwise as it was.
	before, _ := s.GetSandbox(ctxA, stopped.ID)
	if err := s.SetSandboxDisk(system(), stopped.ID, 5000); err != nil {
		t.Fatal(err)
	}
	after, _ := s.GetSandbox(ctxA, stopped.ID)
	if after.DiskBytes != 5000 || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("after SetSandboxDisk: disk %d, updated %v (was %v); want 5000, unchanged", after.DiskBytes, after.UpdatedAt, before.UpdatedAt)
	}
	if _, err := s.UpdateSandbox(ctxA, stopped.ID, func(sb *store.Sandbox) error { sb.DiskBytes = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSandbox(ctxA, stopped.ID); got.DiskBytes != 5000 {
		t.Errorf("UpdateSandbox changed the measured disk to %d", got.DiskBytes)
	}
	want("after a measurement", a.ID, store.TenantUsage{Sandboxes: 3, MemoryMB: 1280, CPUMilli: 2500, Pids: 72, SandboxDiskBytes: 6100})
	if _, err := s.UpdateSandbox(ctxA, stopped.ID, func(sb *store.Sandbox) error { sb.State = api.StateDestroyed; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSandbox(ctxA, old.ID); err != nil {
		t.Fatal(err)
	}
	want("after a destroy and a delete", a.ID, store.TenantUsage{Sandboxes: 1, SandboxDiskBytes: 1100})
	wantNode("n1 after them", "n1", store.NodeUsage{})
	if err := s.SetSandboxDisk(ctxA, run.ID, 1); !errdefs.HasCode(err, "system_only") {
		t.Errorf("SetSandboxDisk as a member: %v; want system_only", err)
	}
	if err := s.SetSandboxDisk(system(), ids.New(), 1); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Errorf("SetSandboxDisk of a missing sandbox: %v; want sandbox_not_found", err)
	}

	// The rest, counted by the tenant.
	for i := range 2 {
		if err := s.CreateSnapshot(ctxA, &store.Snapshot{SandboxID: run.ID, Template: "host", Driver: "namespace", Bytes: 300}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateVolume(ctxA, &store.Volume{Name: fmt.Sprintf("v%d", i), SizeMB: 2}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSecret(ctxA, newSecret(fmt.Sprintf("S%d", i))); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateApp(ctxA, &store.App{Name: fmt.Sprintf("app%d-%s", i, ids.Token(4)), Preset: "static"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateTemplate(ctxA, &store.Template{Name: "img", Source: "upload", Digest: "sha256:" + hex64('e'), Layers: []string{"sha256:" + hex64('3')}, Bytes: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateKey(system(), newKey(a.ID, "k", api.RoleMember)); err != nil {
		t.Fatal(err)
	}
	w := store.TenantUsage{Sandboxes: 1, SandboxDiskBytes: 1100, Snapshots: 2, SnapshotBytes: 600, Volumes: 2, VolumeMB: 4,
		Templates: 1, TemplateBytes: 7, Apps: 2, Keys: 1, Secrets: 2}
	want("every kind", a.ID, w)
	if d := w.DiskBytes(); d != 1100+600+4<<20+7 {
		t.Errorf("DiskBytes = %d", d)
	}

	if got, err := s.TenantUsage(ctxA, a.ID); err != nil || got != w {
		t.Errorf("a's member reads its usage: %+v, %v", got, err)
	}
	_, err := s.TenantUsage(ctxB, a.ID)
	wantErr(t, "b reads a's usage", err, errdefs.ErrNotFound, "tenant_not_found")
	_, err = s.TenantUsage(system(), ids.New())
	wantErr(t, "a missing tenant's usage", err, errdefs.ErrNotFound, "tenant_not_found")
	_, err = s.NodeUsage(ctxA, "n1")
	wantErr(t, "a member reads a node's usage", err, errdefs.ErrForbidden, "system_only")
}
