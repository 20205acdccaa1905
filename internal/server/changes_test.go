package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/store/postgres"
	"github.com/hutchdev/hutch/internal/testutil"
)

func TestMain(m *testing.M) { testutil.RunWithPostgres(m) }

// TestRevokeOnAnotherPlane: a key revoked by another control plane on
// the same Postgres ends, within a second, the event stream this server
// serves it: hutch serve follows the store's changes.
func TestRevokeOnAnotherPlane(t *testing.T) {
	var log bytes.Buffer
	cfg, logger := testConfig(t, &log)
	cfg.Store, cfg.StoreURL = "postgres", testutil.PostgresURL(t)
	s, err := Start(context.Background(), cfg, logger, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	other, err := postgres.Open(context.Background(), cfg.StoreURL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	admin, err := os.ReadFile(s.AdminKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	adminID, _, err := auth.ParseKey(strings.TrimSpace(string(admin)))
	if err != nil {
		t.Fatal(err)
	}
	sys := tenancy.System(context.Background())
	adminKey, err := other.LookupKey(sys, adminID)
	if err != nil {
		t.Fatal(err)
	}
	k, full := auth.NewKey(adminKey.TenantID, "doomed", api.RoleMember)
	if err := other.CreateKey(sys, k); err != nil {
		t.Fatal(err)
	}

	req, err := http.NewRequest("GET", "http://"+s.Addr().String()+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+full)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the stream: %s", resp.Status)
	}
	ended := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		ended <- time.Now()
	}()
	start := time.Now()
	if _, err := other.DeleteKey(sys, k.ID, false); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-ended:
		t.Logf("the stream ended %v after the other plane's revocation", at.Sub(start))
	case <-time.After(time.Second):
		t.Fatal("the stream of a key revoked on another plane goes on after a second")
	}
}
