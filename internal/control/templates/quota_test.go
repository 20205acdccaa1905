package templates_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/control/templates"
	"github.com/hutchdev/hutch/internal/store/sqlite"
	"github.com/hutchdev/hutch/internal/testutil"
)

// TestQuota: a template is admitted against its tenant's quotas: its
// bytes, known once its image is unpacked, past templates_mb leave
// nothing behind (no record, no flattened tree); one past the number of
// templates is refused before anything is fetched.
func TestQuota(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sys := tenancy.System(context.Background())
	tn, _, _, err := auth.CreateTenant(sys, st, "t")
	if err != nil {
		t.Fatal(err)
	}
	ctx := tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})
	dir := filepath.Join(t.TempDir(), "layers")
	q := quota.New(quota.Config{Store: st, Defaults: api.QuotaLimits{Templates: 1, TemplatesMB: 1}})
	svc, err := templates.New(templates.Config{Dir: dir, Quotas: q}, st, nil, events.New(st, events.Config{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	archive := testutil.WriteDockerSave(t, testutil.BusyboxImage(t, testutil.BusyboxOpts()), "bb:1")

	_, err = importFile(t, svc, ctx, "bb", archive)
	if !errdefs.HasCode(err, "quota_exceeded") || !strings.Contains(err.Error(), "quota templates_mb exceeded") {
		t.Fatalf("a template past 1 MiB of templates: %v; want quota_exceeded naming templates_mb", err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "flat")); len(left) != 0 {
		t.Errorf("a refused template left %d trees", len(left))
	}
	if _, err := svc.Get(ctx, "bb"); !errdefs.HasCode(err, "template_not_found") {
		t.Errorf("a refused template was recorded: %v", err)
	}

	none := 0
	if _, err := st.SetTenantQuotas(sys, tn.ID, api.Quotas{TemplatesMB: &none}); err != nil {
		t.Fatal(err)
	}
	if _, err := importFile(t, svc, ctx, "bb", archive); err != nil {
		t.Fatalf("a template with no limit of bytes: %v", err)
	}
	_, err = importFile(t, svc, ctx, "bb2", archive)
	if !errdefs.HasCode(err, "quota_exceeded") || !strings.Contains(err.Error(), "quota templates exceeded") {
		t.Fatalf("a second template against a quota of one: %v; want quota_exceeded naming templates", err)
	}
}
