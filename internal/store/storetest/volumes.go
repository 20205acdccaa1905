package storetest

import (
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// testVolumes covers the volume methods: round trip, names, tenant
// isolation, and deletion refused while a sandbox not destroyed mounts
// the volume.
func testVolumes(t *testing.T, s store.Store) {
	_, ctx := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	v := &store.Volume{Name: "cache", SizeMB: 64, SizeEnforced: true, Node: "n1"}
	if err := s.CreateVolume(ctx, v); err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	got, err := s.GetVolume(ctx, "cache")
	if err != nil || *got != *v {
		t.Fatalf("GetVolume = %+v, %v; want %+v", got, err, v)
	}
	dup := &store.Volume{Name: "cache", SizeMB: 1}
	wantErr(t, "same name", s.CreateVolume(ctx, dup), errdefs.ErrConflict, "volume_exists")
	wantErr(t, "bad name", s.CreateVolume(ctx, &store.Volume{Name: "../x", SizeMB: 1}), errdefs.ErrInvalid, "invalid_volume_name")
	wantErr(t, "no size", s.CreateVolume(ctx, &store.Volume{Name: "x"}), errdefs.ErrInvalid, "invalid_volume")
	if _, err := s.GetVolume(ctxB, "cache"); !errdefs.HasCode(err, "volume_not_found") {
		t.Errorf("another tenant's get: %v", err)
	}
	if _, err := s.DeleteVolume(ctxB, "cache"); !errdefs.HasCode(err, "volume_not_found") {
		t.Errorf("another tenant's delete: %v", err)
	}
	if list, err := s.ListVolumes(ctxB); err != nil || len(list) != 0 {
		t.Errorf("another tenant lists %v, %v", list, err)
	}
	// A sandbox of another tenant mounting a volume of that name holds
	// nothing here.
	other := &store.Sandbox{State: api.StateRunning, Template: "host", Driver: "namespace", Volumes: []api.VolumeMount{{Name: "cache", Path: "/data"}}}
	if err := s.CreateSandbox(ctxB, other); err != nil {
		t.Fatal(err)
	}
	sb := &store.Sandbox{State: api.StateStopped, Template: "host", Driver: "namespace", Volumes: []api.VolumeMount{{Name: "cache", Path: "/data", ReadOnly: true}}}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if back, err := s.GetSandbox(ctx, sb.ID); err != nil || len(back.Volumes) != 1 || back.Volumes[0] != sb.Volumes[0] {
		t.Errorf("the sandbox's volumes read back as %+v, %v", back, err)
	}
	if _, err := s.DeleteVolume(ctx, "cache"); !errdefs.HasCode(err, "volume_in_use") {
		t.Errorf("delete a volume a stopped sandbox mounts: %v; want volume_in_use", err)
	}
	if _, err := s.UpdateSandbox(ctx, sb.ID, func(r *store.Sandbox) error { r.State = api.StateDestroyed; return nil }); err != nil {
		t.Fatal(err)
	}
	deleted, err := s.DeleteVolume(ctx, "cache")
	if err != nil || deleted.ID != v.ID {
		t.Errorf("delete once its sandbox is destroyed: %+v, %v", deleted, err)
	}
}
