package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/secrets"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

func TestMain(m *testing.M) { testutil.RunWithPostgres(m) }

// singleBox makes a data directory as one hutch serve leaves it: its
// SQLite store with a tenant, a sandbox with labels and a secret sealed
// by the master key in the directory's key file.
func singleBox(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sealer, _, err := secrets.LoadKey("", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := store.Tenant{ID: ids.New(), Name: "acme"}
	if err := st.CreateTenant(tenancy.System(context.Background()), tn); err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleAdmin})
	sb := &store.Sandbox{ID: ids.New(), State: api.StateRunning, Template: "host", Driver: "process", Labels: map[string]string{"a": "b"}}
	if err := st.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	nonce, sealed, err := sealer.Seal(tn.ID, "TOKEN", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSecret(ctx, &store.Secret{Name: "TOKEN", ValueBytes: 5, KeyID: sealer.KeyID(), Nonce: nonce, Ciphertext: sealed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStoreMigrate: hutch store migrate prints each table's rows, where
// the clocks now stand and which master key every node needs; a dry run
// says it wrote nothing, under --json as the report, and warns of a
// master key other than the one that sealed what it copies; a second copy into
// the same database is refused with its code; a missing --to is a usage
// error.
func TestStoreMigrate(t *testing.T) {
	ctx := context.Background()
	dir := singleBox(t)
	// The test server trusts its users: the password is only there to
	// be kept off the output.
	u, err := url.Parse(testutil.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "s3cret")
	dsn := u.String()
	migrateEnv := func(vars map[string]string, json bool, extra ...string) (int, string, string) {
		e, errb := testEnv(vars)
		args := append([]string{"store", "migrate", "--from", "sqlite://" + dir, "--to", dsn}, extra...)
		if json {
			args = append(args, "--json")
		}
		code := run(ctx, e, args)
		return code, e.stdout.(*bytes.Buffer).String(), errb.String()
	}
	migrate := func(json bool, extra ...string) (int, string, string) {
		return migrateEnv(nil, json, extra...)
	}

	code, out, errs := migrate(true, "--dry-run")
	var rep struct {
		DryRun bool `json:"dry_run"`
		Tables []struct {
			Table string `json:"table"`
			Rows  int64  `json:"rows"`
		} `json:"tables"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.DryRun || len(rep.Tables) == 0 || rep.Tables[0].Table != "tenants" || rep.Tables[0].Rows != 1 {
		t.Fatalf("dry run --json: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	// A master key other than the one that sealed the secret: warned.
	other := strings.Repeat("ab", 32)
	code, out, errs = migrateEnv(map[string]string{"HUTCH_SECRETS_KEY": other}, false, "--dry-run")
	if code != 0 || !strings.Contains(out, "dry run: nothing was written") ||
		!strings.Contains(out, "warning: of 1 sealed values, 1 are by another master key than the one in $HUTCH_SECRETS_KEY") {
		t.Errorf("dry run with another key: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	code, out, errs = migrate(false)
	if code != 0 {
		t.Fatalf("migrate: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		`(?m)^tenants\s+1\s*$`,
		`(?m)^sandboxes\s+1\s*$`,
		`(?m)^sandbox_labels\s+1\s+into sandboxes\.labels$`,
		`(?m)^secrets\s+1\s*$`,
		`(?m)^events\s+0\s*$`,
		`copied .*hutch\.db into postgres://`,
		`new sandbox revisions follow 1, new event ids follow none`,
		`the master key is the one in ` + regexp.QuoteMeta(filepath.Join(dir, "secrets.key")) + ` \(1 sealed values copied\); every node needs it as HUTCH_SECRETS_KEY`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("stdout lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("stdout shows the target's password:\n%s", out)
	}

	code, _, errs = migrate(true)
	if code != 1 || !strings.Contains(errs, `"code":"target_not_empty"`) {
		t.Errorf("a second migrate: exit %d, stderr %q; want 1 and target_not_empty", code, errs)
	}
	e, errb := testEnv(nil)
	if code := run(ctx, e, []string{"store", "migrate", "--from", dir}); code != 2 || !strings.Contains(errb.String(), "--to") {
		t.Errorf("without --to: exit %d, stderr %q; want a usage error", code, errb.String())
	}
}
