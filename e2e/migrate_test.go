package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestStoreMigrate: a single box moved to Postgres with hutch store
// migrate serves on as the first node of a fleet: hutch serve --store
// postgres on the same data directory finds its sandbox running and
// re-attaches it (its files, its background process, its sealed env
// value opened with the same master key, its labels), lists the secret
// and every event it had, and what it writes next comes after them.
func TestStoreMigrate(t *testing.T) {
	ctx := context.Background()
	dsn := testutil.PostgresURL(t)
	dataDir := testutil.DataDir(t)
	s := startServer(t, dataDir)
	c := s.client()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Env: map[string]string{"GREETING": "hi"}, Labels: map[string]string{"team": "docs"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "echo kept > kept.txt; sleep 300 >/dev/null 2>&1 & echo $!"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	bgPid := strings.TrimSpace(res.Stdout)
	if _, err := c.CreateSecret(ctx, api.CreateSecretRequest{Name: "TOKEN", Value: "s3cret-value"}); err != nil {
		t.Fatal(err)
	}
	before, err := c.Events(ctx, client.EventQuery{Limit: 1000})
	if err != nil || len(before.Events) == 0 {
		t.Fatalf("events before = %+v, %v", before, err)
	}
	s.stop(false)

	out, err := exec.Command(filepath.Join(binDir, "hutch"), "store", "migrate",
		"--from", "sqlite://"+filepath.Join(dataDir, "hutch.db"), "--to", dsn).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "copied ") ||
		!strings.Contains(string(out), "the master key is the one in "+filepath.Join(dataDir, "secrets.key")) {
		t.Fatalf("hutch store migrate: %v\n%s", err, out)
	}

	s2, _ := launch(t, nil, dataDir, []string{"HUTCH_STORE_URL=" + dsn}, "--store", "postgres")
	c2 := s2.client()
	got, err := c2.GetSandbox(ctx, sb.ID)
	if err != nil || got.State != api.StateRunning || got.Labels["team"] != "docs" {
		t.Fatalf("the sandbox on Postgres = %+v, %v", got, err)
	}
	res, err = c2.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", "cat kept.txt; echo $GREETING; kill -0 " + bgPid + " && echo alive"}})
	if err != nil || res.Stdout != "kept\nhi\nalive\n" {
		t.Fatalf("exec on Postgres = %+v, %v", res, err)
	}
	secrets, err := c2.ListSecrets(ctx)
	if err != nil || len(secrets.Secrets) != 1 || secrets.Secrets[0].Name != "TOKEN" {
		t.Fatalf("secrets on Postgres = %+v, %v", secrets, err)
	}
	sb2, err := c2.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := c2.Events(ctx, client.EventQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range after.Events {
		ids = append(ids, e.ID)
	}
	for _, e := range before.Events {
		if !slices.Contains(ids, e.ID) {
			t.Errorf("event %s (%s) was not copied", e.ID, e.Type)
		}
	}
	last := before.Events[len(before.Events)-1].ID
	var created bool
	for _, e := range after.Events {
		if e.SandboxID == sb2.ID && e.Type == api.EventSandboxCreated {
			created = e.ID > last
		}
	}
	if !created {
		t.Errorf("no sandbox.created event of the new sandbox after the copied %s: %+v", last, after.Events)
	}
}
