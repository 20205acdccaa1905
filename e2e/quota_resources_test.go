package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestQuotaResources is the review's attack on what a key makes besides
// sandboxes: a tenant's member key makes snapshots, volumes, secrets and
// keys, and opens watches and streams, past small quotas its admin set.
// Each one past is 429 quota_exceeded naming the quota (every one used to
// be made, so a member key could fill the disk or the store), and the
// usage shows in GET /v1/tenants/{id}/quotas.
func TestQuotaResources(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for the namespace driver's snapshots; CI runs as root")
	}
	s := startServer(t, "", "--driver", "namespace", "--warm-pool", "0")
	ctx := context.Background()
	admin := s.client()
	tn, err := admin.CreateTenant(ctx, api.CreateTenantRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	member := client.New(s.url, tn.Key.Secret)
	t.Cleanup(func() {
		for sb, err := range member.AllSandboxes(context.Background(), client.ListOptions{}) {
			if err != nil {
				break
			}
			member.DeleteSandbox(context.Background(), sb.ID)
		}
	})
	two, one, three, four := 2, 1, 3, 4
	if _, err := admin.SetTenantQuotas(ctx, tn.ID, api.Quotas{Snapshots: &two, Volumes: &one, Secrets: &two,
		Keys: &three, Watches: &one, Streams: &four}); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error, quota string) {
		t.Helper()
		if client.StatusCode(err) != http.StatusTooManyRequests || client.Code(err) != "quota_exceeded" || !strings.Contains(err.Error(), "quota "+quota+" ") {
			t.Fatalf("%s: %v; want 429 quota_exceeded naming %s", what, err, quota)
		}
	}

	sb, err := member.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := member.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{}); err != nil {
			t.Fatalf("snapshot %d: %v", i+1, err)
		}
	}
	_, err = member.CreateSnapshot(ctx, sb.ID, api.CreateSnapshotRequest{})
	refused("a third snapshot against a quota of two", err, "snapshots")

	if _, err := member.CreateVolume(ctx, api.CreateVolumeRequest{Name: "v1", SizeMB: 8, SizeBestEffort: true}); err != nil {
		t.Fatal(err)
	}
	_, err = member.CreateVolume(ctx, api.CreateVolumeRequest{Name: "v2", SizeMB: 8, SizeBestEffort: true})
	refused("a second volume against a quota of one", err, "volumes")

	for i := range 2 {
		if _, err := member.CreateSecret(ctx, api.CreateSecretRequest{Name: fmt.Sprintf("S%d", i), Value: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = member.CreateSecret(ctx, api.CreateSecretRequest{Name: "S2", Value: "x"})
	refused("a third secret against a quota of two", err, "secrets")

	// The tenant has its first key; two more would pass three.
	if _, err := member.CreateKey(ctx, api.CreateKeyRequest{Name: "ci", Role: api.RoleMember}); err != nil {
		t.Fatal(err)
	}
	if _, err := member.CreateKey(ctx, api.CreateKeyRequest{Name: "ci2", Role: api.RoleReader}); err != nil {
		t.Fatal(err)
	}
	_, err = member.CreateKey(ctx, api.CreateKeyRequest{Name: "ci3", Role: api.RoleReader})
	refused("a fourth key against a quota of three", err, "keys")

	w, err := member.WatchFiles(ctx, sb.ID, "/workspace", true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = member.WatchFiles(ctx, sb.ID, "/tmp", false)
	refused("a second watch against a quota of one", err, "watches")
	w.Close()
	// Released when the stream ends: the server sees the close soon.
	waitFor(t, "the watch's place back", 10*time.Second, func() bool {
		w, err := member.WatchFiles(ctx, sb.ID, "/tmp", false)
		if err == nil {
			w.Close()
		}
		return err == nil
	})

	var streams []*client.EventStream
	for i := range 4 {
		st, err := member.StreamEvents(ctx, client.EventQuery{})
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		streams = append(streams, st)
	}
	_, err = member.StreamEvents(ctx, client.EventQuery{})
	refused("a fifth stream against a quota of four", err, "streams")
	for _, st := range streams {
		st.Close()
	}

	q, err := member.TenantQuotas(ctx, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u := q.Usage; u.Snapshots != 2 || u.SnapshotsMB == 0 || u.Volumes != 1 || u.VolumesMB != 8 || u.Secrets != 2 || u.Keys != 3 || u.DiskMB < u.SnapshotsMB+u.VolumesMB {
		t.Errorf("usage %+v; want 2 snapshots, 1 volume of 8 MiB, 2 secrets, 3 keys, all on the disk", u)
	}
	if !q.DiskEnforced {
		t.Errorf("disk_enforced is false")
	}
}
