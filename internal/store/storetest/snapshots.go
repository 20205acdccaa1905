package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// testSnapshots covers the snapshot methods: round trip, listing newest
// first and by sandbox, tenant isolation, deletion, and a snapshot
// holding its template.
func testSnapshots(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	sb := newSandbox(t, s, ctx, nil)
	var made []*store.Snapshot
	for i, name := range []string{"first", "", "third"} {
		snap := &store.Snapshot{SandboxID: sb.ID, Name: name, Template: "host", Driver: "namespace", Bytes: int64(i) * 100, Files: 3, PauseMS: 7}
		if i == 2 {
			snap.SandboxID = "another"
		}
		if err := s.CreateSnapshot(ctx, snap); err != nil {
			t.Fatalf("CreateSnapshot: %v", err)
		}
		made = append(made, snap)
	}
	got, err := s.GetSnapshot(ctx, made[0].ID)
	if err != nil {
		t.Fatalf("GetSnapshot: %v", err)
	}
	if diff := cmp.Diff(made[0], got); diff != "" {
		t.Errorf("GetSnapshot differs (-want +got):\n%s", diff)
	}
	list, err := s.ListSnapshots(ctx, store.SnapshotQuery{})
	if err != nil || len(list) != 3 || list[0].ID != made[2].ID || list[2].ID != made[0].ID {
		t.Errorf("ListSnapshots = %d, %v; want all three, newest first", len(list), err)
	}
	list, err = s.ListSnapshots(ctx, store.SnapshotQuery{SandboxID: sb.ID})
	if err != nil || len(list) != 2 {
		t.Errorf("ListSnapshots of the sandbox = %d, %v; want 2", len(list), err)
	}
	// Another tenant sees none of them.
	if _, err := s.GetSnapshot(ctxB, made[0].ID); !errdefs.HasCode(err, "snapshot_not_found") {
		t.Errorf("other tenant's get: %v; want snapshot_not_found", err)
	}
	wantErr(t, "other tenant's delete", s.DeleteSnapshot(ctxB, made[0].ID), errdefs.ErrNotFound, "snapshot_not_found")
	if list, _ := s.ListSnapshots(ctxB, store.SnapshotQuery{}); len(list) != 0 {
		t.Errorf("other tenant lists %d snapshots", len(list))
	}
	if all, err := s.ListSnapshots(system(), store.SnapshotQuery{}); err != nil || len(all) < 3 {
		t.Errorf("the system's list = %d, %v", len(all), err)
	}
	if err := s.DeleteSnapshot(ctx, made[0].ID); err != nil {
		t.Fatalf("DeleteSnapshot: %v", err)
	}
	if _, err := s.GetSnapshot(ctx, made[0].ID); !errdefs.HasCode(err, "snapshot_not_found") {
		t.Errorf("get after delete: %v", err)
	}

	// A snapshot over a template holds it as a sandbox does.
	tmpl := &store.Template{Name: "img", Source: "upload", Digest: "sha256:" + hex64('e'), Layers: []string{"sha256:" + hex64('3')}}
	if err := s.CreateTemplate(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	snap := &store.Snapshot{SandboxID: "gone", Template: "img", Driver: "namespace"}
	if err := s.CreateSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete a template a snapshot holds", s.DeleteTemplate(ctx, "img"), errdefs.ErrConflict, "template_in_use")
	if err := s.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(ctx, "img"); err != nil {
		t.Errorf("delete the template once its snapshot is gone: %v", err)
	}
}
