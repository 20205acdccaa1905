package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver/namespace"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/store"
)

// TestSnapshotAcrossNodes: a snapshot's files are on the disk of the node
// that ran its sandbox, and whatever node is asked goes there: a
// sandbox started from it through the other node is made on its node
// (where placement alone would not send it), and deleting it through
// the other node removes its files with its record.
func TestSnapshotAcrossNodes(t *testing.T) {
	f := startFleet(t, func(_ string, cfg *config.Config) { cfg.Driver = namespace.Name })
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)
	sb, err := viaA.CreateSandbox(ctx, api.CreateSandboxRequest{Driver: namespace.Name})
	if err != nil {
		t.Skipf("the namespace driver cannot run here: %v", err)
	}
	t.Cleanup(func() { viaA.DeleteSandbox(ctx, sb.ID) })
	if sb.Node != "a" {
		t.Fatalf("created on %q, want a", sb.Node)
	}
	snap, err := viaB.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{})
	if err != nil {
		t.Fatalf("snapshot through b: %v", err)
	}
	files := filepath.Join(snapshotDir(f.a.cfg), snap.ID)
	if _, err := os.Stat(files); err != nil {
		t.Fatalf("snapshot's files on a: %v", err)
	}

	// a no longer says it has the namespace driver: placement alone
	// would send a create of that driver to b.
	if _, err := f.st.RegisterNode(tenancy.System(ctx), store.Node{Name: "a", Advertise: "http://" + f.tap.addr, Drivers: []string{"process"},
		Load: store.NodeLoad{MemoryBytes: 8 << 30, CommittedMemoryBytes: 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	from, err := viaB.CreateSandbox(ctx, api.CreateSandboxRequest{Snapshot: snap.ID, Driver: namespace.Name})
	if err != nil {
		t.Fatalf("create from the snapshot through b: %v", err)
	}
	if from.Node != "a" {
		t.Fatalf("created from a's snapshot on %q, want a, where its files are", from.Node)
	}
	if err := viaB.DeleteSandbox(ctx, from.ID); err != nil {
		t.Fatal(err)
	}
	// A sandbox of b is not restored from a's snapshot, whose files b's
	// disk lacks: refused before anything of it is touched.
	onB, err := viaA.CreateSandbox(ctx, api.CreateSandboxRequest{Driver: namespace.Name})
	if err != nil || onB.Node != "b" {
		t.Fatalf("a namespace sandbox placed on b: %+v, %v", onB, err)
	}
	t.Cleanup(func() { viaB.DeleteSandbox(ctx, onB.ID) })
	if _, err := viaA.WriteFile(ctx, onB.ID, "kept.txt", 0o644, strings.NewReader("kept")); err != nil {
		t.Fatal(err)
	}
	_, err = viaA.Restore(ctx, onB.ID, api.RestoreRequest{Snapshot: snap.ID})
	wantCode(t, "a restore of b's sandbox from a's snapshot", err, 409, "snapshot_elsewhere")
	if got, err := viaB.Exec(ctx, onB.ID, api.ExecRequest{Cmd: []string{"cat", "kept.txt"}}); err != nil || got.Stdout != "kept" {
		t.Fatalf("b's sandbox after the refused restore: %+v, %v; want it running with its file", got, err)
	}
	// So is one the E2B layer creates from it (E2B's template id naming
	// the snapshot).
	req, _ := http.NewRequest("POST", "http://"+f.b.Addr().String()+"/e2b/sandboxes", strings.NewReader(`{"templateID":"`+snap.ID+`"}`))
	req.Header.Set("X-API-KEY", f.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var made struct {
		SandboxID string `json:"sandboxID"`
	}
	json.NewDecoder(resp.Body).Decode(&made)
	resp.Body.Close()
	if resp.StatusCode != 201 || made.SandboxID == "" {
		t.Fatalf("E2B create from a's snapshot through b: %d %+v", resp.StatusCode, made)
	}
	if e2bSb, err := viaA.GetSandbox(ctx, made.SandboxID); err != nil || e2bSb.Node != "a" {
		t.Fatalf("E2B create from a's snapshot through b: %+v, %v; want it on a", e2bSb, err)
	}
	if err := viaA.DeleteSandbox(ctx, made.SandboxID); err != nil {
		t.Fatal(err)
	}

	if err := viaB.DeleteSnapshot(ctx, snap.ID); err != nil {
		t.Fatalf("delete through b: %v", err)
	}
	if _, err := os.Stat(files); !os.IsNotExist(err) {
		t.Fatalf("snapshot deleted through b; its files on a: %v, want gone", err)
	}
	if _, err := viaA.GetSnapshot(ctx, snap.ID); err == nil {
		t.Fatal("snapshot deleted through b is still recorded")
	}
}

// TestVolumeAcrossNodes: a volume's files are on the disk of the node
// that made it, which its record names: a sandbox mounting it is made
// there whichever node is asked, and deleting it through another node
// removes its files with its record.
func TestVolumeAcrossNodes(t *testing.T) {
	f := startFleet(t, func(_ string, cfg *config.Config) { cfg.Driver = namespace.Name })
	ctx := context.Background()
	viaA := client.New("http://"+f.a.Addr().String(), f.admin)
	viaB := client.New("http://"+f.b.Addr().String(), f.admin)
	v, err := viaB.CreateVolume(ctx, api.CreateVolumeRequest{Name: "cache", SizeMB: 16, SizeBestEffort: true})
	if err != nil {
		t.Skipf("volumes cannot be made here: %v", err)
	}
	if v.Node != "b" {
		t.Fatalf("volume made through b on %q", v.Node)
	}
	onB, err := os.ReadDir(filepath.Join(f.b.cfg.DataDir, "volumes"))
	if err != nil || len(onB) != 1 {
		t.Fatalf("b's volumes: %v, %v", onB, err)
	}
	// Placement prefers a (the most room); the volume is b's.
	sb, err := viaA.CreateSandbox(ctx, api.CreateSandboxRequest{Driver: namespace.Name, Volumes: []api.VolumeMount{{Name: "cache", Path: "/mnt/cache"}}})
	if err != nil {
		t.Fatalf("create mounting b's volume through a: %v", err)
	}
	if sb.Node != "b" {
		t.Fatalf("a sandbox mounting b's volume made on %q", sb.Node)
	}
	if err := viaA.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := viaA.DeleteVolume(ctx, "cache"); err != nil {
		t.Fatalf("delete b's volume through a: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(f.b.cfg.DataDir, "volumes")); len(left) != 0 {
		t.Fatalf("volume deleted through a; left on b: %v", left)
	}
}
