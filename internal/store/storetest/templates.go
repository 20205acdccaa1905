package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// testTemplates covers the template methods: round trip, conflicts,
// names, tenant isolation, listing for the system, and deletion refused
// while a sandbox that is not destroyed starts from the template.
func testTemplates(t *testing.T, s store.Store) {
	a, ctx := newTenant(t, s, "a")
	_, ctxB := newTenant(t, s, "b")
	tmpl := &store.Template{
		Name: "debian", Source: "127.0.0.1:5000/debian:bookworm", Digest: "sha256:" + hex64('d'),
		Config: api.ImageConfig{Env: []string{"PATH=/usr/bin"}, WorkingDir: "/srv", User: "app"},
		Layers: []string{"sha256:" + hex64('1'), "sha256:" + hex64('2')}, Bytes: 1234,
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 999999999, time.UTC), Node: "n1",
	}
	if err := s.CreateTemplate(ctx, tmpl); err != nil {
		t.Fatalf("CreateTemplate: %v", err)
	}
	if tmpl.TenantID != a.ID || tmpl.ID == "" || !tmpl.CreatedAt.Equal(store.Time(tmpl.CreatedAt)) {
		t.Errorf("created template has tenant %q id %q created %v", tmpl.TenantID, tmpl.ID, tmpl.CreatedAt)
	}
	got, err := s.GetTemplate(ctx, "debian")
	if err != nil {
		t.Fatalf("GetTemplate: %v", err)
	}
	if diff := cmp.Diff(tmpl, got); diff != "" {
		t.Errorf("GetTemplate differs from what was created (-want +got):\n%s", diff)
	}
	dup := *tmpl
	dup.ID = ""
	wantErr(t, "same name again", s.CreateTemplate(ctx, &dup), errdefs.ErrConflict, "template_exists")
	for _, name := range []string{"host", "", ".x", "-x", "a/b", string(make([]byte, api.MaxTemplateName+1))} {
		bad := *tmpl
		bad.ID, bad.Name = "", name
		wantErr(t, "name "+name, s.CreateTemplate(ctx, &bad), errdefs.ErrInvalid, "invalid_template_name")
	}

	// Another tenant sees none of it, and may use the same name.
	_, err = s.GetTemplate(ctxB, "debian")
	wantErr(t, "other tenant's get", err, errdefs.ErrNotFound, "template_not_found")
	wantErr(t, "other tenant's delete", s.DeleteTemplate(ctxB, "debian"), errdefs.ErrNotFound, "template_not_found")
	if list, err := s.ListTemplates(ctxB); err != nil || len(list) != 0 {
		t.Errorf("other tenant's list = %v, %v; want none", list, err)
	}
	other := *tmpl
	other.ID = ""
	if err := s.CreateTemplate(ctxB, &other); err != nil {
		t.Errorf("the same name in another tenant: %v", err)
	}
	all, err := s.ListTemplates(system())
	if err != nil || len(all) < 2 {
		t.Errorf("the system's list = %d templates, %v; want both tenants'", len(all), err)
	}
	if _, err := s.GetTemplate(system(), "debian"); !errdefs.HasCode(err, "no_tenant") {
		t.Errorf("the system's get by name without a principal: %v; want no_tenant", err)
	}

	// A sandbox that is not destroyed holds its template.
	sb := &store.Sandbox{State: api.StateStopped, Template: "debian", Driver: "namespace"}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	wantErr(t, "delete in use", s.DeleteTemplate(ctx, "debian"), errdefs.ErrConflict, "template_in_use")
	if _, err := s.UpdateSandbox(ctx, sb.ID, func(r *store.Sandbox) error { r.State = api.StateDestroyed; return nil }); err != nil {
		t.Fatalf("UpdateSandbox: %v", err)
	}
	if err := s.DeleteTemplate(ctx, "debian"); err != nil {
		t.Errorf("delete once its sandbox is destroyed: %v", err)
	}
	_, err = s.GetTemplate(ctx, "debian")
	wantErr(t, "get after delete", err, errdefs.ErrNotFound, "template_not_found")
	if _, err := s.GetTemplate(ctxB, "debian"); err != nil {
		t.Errorf("the other tenant's template went too: %v", err)
	}
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
