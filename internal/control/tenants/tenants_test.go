package tenants

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/auth"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// fixture is a server's control tier without its edge: a real store, the
// sandbox service on the fake driver, the authenticator, an admin tenant
// and a tenant to delete with sandboxes and records.
type fixture struct {
	st      store.Store
	drv     *fake.Driver
	sbx     *sandbox.Service
	auth    *auth.Authenticator
	events  *events.Log
	admin   context.Context // an admin key of the admin tenant
	adminID string          // the admin tenant
	victim  string          // the tenant to delete
	as      context.Context // a member of victim
	key     string          // victim's first key, whole
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, auth: &auth.Authenticator{Store: st}, events: events.New(st, events.Config{})}
	sys := tenancy.System(context.Background())
	admin := store.Tenant{ID: ids.New(), Name: auth.AdminTenant}
	ak, _ := auth.NewKey(admin.ID, "admin", api.RoleAdmin)
	if err := st.CreateTenant(sys, admin, ak); err != nil {
		t.Fatal(err)
	}
	f.adminID = admin.ID
	f.admin = tenancy.With(context.Background(), tenancy.Principal{TenantID: admin.ID, KeyID: ak.ID, Role: api.RoleAdmin})
	victim, _, key, err := auth.CreateTenant(f.admin, st, "victim")
	if err != nil {
		t.Fatal(err)
	}
	f.victim, f.key = victim.ID, key
	f.as = tenancy.With(context.Background(), tenancy.Principal{TenantID: victim.ID, Role: api.RoleMember})

	f.drv = fake.New(fake.Config{Dir: t.TempDir()})
	if err := f.drv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Shutdown(f.drv) })
	f.sbx, err = sandbox.New(sandbox.Config{
		Store: st, Drivers: driver.Single(f.drv), Events: f.events, Node: "node-a", Log: slog.New(slog.DiscardHandler),
		DefaultTemplate: "host",
		DefaultLimits:   api.Limits{MemoryMB: 256, CPU: 1, Pids: 64},
		MaxLimits:       api.Limits{MemoryMB: 1024, CPU: 2, Pids: 256},
		Settings:        api.Settings{DefaultTimeoutS: 3600, MaxTimeoutS: 3600, OnExpiry: api.OnExpiryDestroy, OnIdle: api.OnExpiryPause},
		MaxFileBytes:    1 << 20, MaxOutputBytes: 1 << 20, TeardownTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.sbx.Close)
	return f
}

// service builds a tenants service over the fixture, as a start of the
// server does, closed at the test's end.
func (f *fixture) service(t *testing.T) *Service {
	t.Helper()
	s, err := New(Config{Store: f.st, Keys: f.auth, Sandboxes: f.sbx, Events: f.events, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// fill gives the victim n running sandboxes and a record of each kind
// the store keeps for it.
func (f *fixture) fill(t *testing.T, n int) []string {
	t.Helper()
	var sbs []string
	for range n {
		sb, err := f.sbx.Create(f.as, api.CreateSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		sbs = append(sbs, sb.ID)
	}
	for _, err := range []error{
		f.st.CreateTemplate(f.as, &store.Template{Name: "img", Source: "x", Digest: "sha256:" + strings.Repeat("d", 64), Layers: []string{"sha256:" + strings.Repeat("1", 64)}}),
		f.st.CreateVolume(f.as, &store.Volume{Name: "data", SizeMB: 1}),
		f.st.CreateSecret(f.as, &store.Secret{Name: "TOKEN", KeyID: "k", Nonce: []byte("n"), Ciphertext: []byte("c")}),
		f.st.AppendEvent(f.as, &store.Event{Type: "note"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return sbs
}

// wait polls the victim until cond holds of it.
func (f *fixture) wait(t *testing.T, what string, cond func(store.Tenant) bool) store.Tenant {
	t.Helper()
	var tn store.Tenant
	if !poll(20*time.Second, func() bool {
		var err error
		if tn, err = f.st.GetTenant(f.admin, f.victim); err != nil {
			t.Fatal(err)
		}
		return cond(tn)
	}) {
		t.Fatalf("%s: the tenant is %s, record %+v", what, tn.State, tn.Deletion)
	}
	return tn
}

// poll calls done every 20 ms until it holds, for at most within; it
// reports whether it held.
func poll(within time.Duration, done func() bool) bool {
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// checkGone fails t unless nothing of the victim is left but its record,
// deleted, and the admin's log holds tenant.deleted.
func (f *fixture) checkGone(t *testing.T, sbs []string) {
	t.Helper()
	tn := f.wait(t, "the deletion ends", func(tn store.Tenant) bool { return tn.State == api.TenantDeleted })
	d := tn.Deletion
	if d == nil || d.Step != api.DeleteStepDone || d.FinishedAt == nil || d.Error != "" || d.By == "" || d.ByTenant != f.adminID {
		t.Errorf("the deletion's record: %+v", d)
	}
	if d != nil && (d.Removed.Sandboxes != len(sbs) || d.Removed.Keys != 1 || d.Removed.Templates != 1 || d.Removed.Volumes != 1 || d.Removed.Secrets != 1) {
		t.Errorf("removed %+v; want %d sandboxes and one of the rest", d.Removed, len(sbs))
	}
	for _, id := range sbs {
		if _, err := f.st.GetSandbox(f.as, id); !errdefs.HasCode(err, "sandbox_not_found") {
			t.Errorf("sandbox %s: %v, want its record gone", id, err)
		}
	}
	if live := f.drv.Live(); len(live) != 0 {
		t.Errorf("the driver still runs %v", live)
	}
	keys, _ := f.st.ListKeys(f.as)
	tmpls, _ := f.st.ListTemplates(f.as)
	vols, _ := f.st.ListVolumes(f.as)
	secs, _ := f.st.ListSecrets(f.as)
	evs, _, _ := f.st.ListEvents(f.as, store.EventQuery{})
	if n := len(keys) + len(tmpls) + len(vols) + len(secs) + len(evs); n != 0 {
		t.Errorf("%d rows of the deleted tenant are left", n)
	}
	// The event is written just after the record turns deleted.
	var admin []store.Event
	var err error
	poll(10*time.Second, func() bool {
		admin, _, err = f.st.ListEvents(f.admin, store.EventQuery{Types: []string{api.EventTenantDeleted}})
		return err != nil || len(admin) > 0
	})
	if err != nil || len(admin) != 1 || admin[0].Data["tenant_id"] != f.victim {
		t.Errorf("the admin's log holds %+v, %v; want one tenant.deleted", admin, err)
	}
}

// TestDeleteFailedStepRecovers: a step that fails stops the deletion with
// the reason in the tenant's record, past steps done (its keys revoked);
// the tenant stays deleting, takes nothing new, and the next start's
// recovery runs the deletion on to the end.
func TestDeleteFailedStepRecovers(t *testing.T) {
	f := newFixture(t)
	sbs := f.fill(t, 3)
	var failed atomic.Bool
	f.drv.Hook(fake.OpDestroy, func(context.Context, string) error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("the disk went away")
		}
		return nil
	})
	s := f.service(t)
	tn, err := s.Delete(f.admin, f.victim)
	if err != nil || tn.State != api.TenantDeleting {
		t.Fatalf("Delete = %+v, %v", tn, err)
	}
	stopped := f.wait(t, "the failure is recorded", func(tn store.Tenant) bool { return tn.Deletion != nil && tn.Deletion.Error != "" })
	if d := stopped.Deletion; stopped.State != api.TenantDeleting || d.Step != api.DeleteStepSandboxes || d.Removed.Keys != 1 ||
		!strings.HasPrefix(d.Error, "sandboxes: ") {
		t.Errorf("after the failed step: %s %+v", stopped.State, d)
	}
	if _, _, err := f.auth.BeginKey(context.Background(), keyIDOf(t, f.key)); err == nil {
		t.Error("the tenant's key still authenticates once its deletion began")
	}
	if _, err := f.sbx.Create(f.as, api.CreateSandboxRequest{}); !errdefs.HasCode(err, "tenant_deleted") {
		t.Errorf("a create for a tenant being deleted: %v, want 403 tenant_deleted", err)
	}
	if _, err := s.Suspend(f.admin, f.victim); !errdefs.HasCode(err, "tenant_state_conflict") {
		t.Errorf("suspend a tenant being deleted: %v", err)
	}

	s.Close() // the server stops
	if err := f.service(t).Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.checkGone(t, sbs)
}

// TestDeleteCutShortRecovers: a deletion the server's stop cuts short,
// inside a sandbox's destroy, is left deleting without a failure, the
// destroy run to its end; the next start's recovery finishes it.
func TestDeleteCutShortRecovers(t *testing.T) {
	f := newFixture(t)
	sbs := f.fill(t, 2)
	inside, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	f.drv.Hook(fake.OpDestroy, func(context.Context, string) error {
		if once.CompareAndSwap(false, true) {
			close(inside)
			<-release
		}
		return nil
	})
	s := f.service(t)
	if _, err := s.Delete(f.admin, f.victim); err != nil {
		t.Fatal(err)
	}
	<-inside
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	time.Sleep(50 * time.Millisecond) // Close has cancelled the work
	close(release)
	<-closed
	tn, err := f.st.GetTenant(f.admin, f.victim)
	if err != nil || tn.State != api.TenantDeleting || tn.Deletion.Error != "" || tn.Deletion.Step != api.DeleteStepSandboxes {
		t.Fatalf("cut short: %+v %+v, %v; want deleting at the sandboxes, no failure", tn, tn.Deletion, err)
	}

	again := f.service(t)
	if err := again.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.checkGone(t, sbs)
	// Deleted, it answers as it is, to every later Delete.
	done, err := again.Delete(f.admin, f.victim)
	if err != nil || done.State != api.TenantDeleted || done.Deletion == nil || done.Deletion.FinishedAt == nil {
		t.Errorf("Delete of a deleted tenant = %+v, %v", done, err)
	}
}

// TestProtected: a tenant neither suspends nor deletes itself, and the
// admin tenant (by name, or any tenant holding an admin key) is neither
// suspended nor deleted; a member's key changes no tenant at all.
func TestProtected(t *testing.T) {
	f := newFixture(t)
	s := f.service(t)
	ops := store.Tenant{ID: ids.New(), Name: "ops"}
	opsKey, _ := auth.NewKey(ops.ID, "admin", api.RoleAdmin)
	if err := f.st.CreateTenant(tenancy.System(context.Background()), ops, opsKey); err != nil {
		t.Fatal(err)
	}
	opsAdmin := tenancy.With(context.Background(), tenancy.Principal{TenantID: ops.ID, KeyID: opsKey.ID, Role: api.RoleAdmin})
	member := tenancy.With(context.Background(), tenancy.Principal{TenantID: f.victim, Role: api.RoleMember})
	for _, c := range []struct {
		who    string
		ctx    context.Context
		tenant string
		code   string
	}{
		{"itself", f.admin, f.adminID, "tenant_protected"},
		{"the admin tenant", opsAdmin, f.adminID, "tenant_protected"},
		{"a tenant holding an admin key", f.admin, ops.ID, "tenant_protected"},
		{"a member, its own tenant", member, f.victim, "admin_required"},
		{"a member, another tenant", member, ops.ID, "admin_required"},
	} {
		for verb, call := range map[string]func(context.Context, string) (api.Tenant, error){"suspend": s.Suspend, "delete": s.Delete} {
			if _, err := call(c.ctx, c.tenant); !errdefs.HasCode(err, c.code) {
				t.Errorf("%s by %s: %v, want %s", verb, c.who, err, c.code)
			}
		}
	}
	if tn, err := f.st.GetTenant(f.admin, f.victim); err != nil || tn.State != api.TenantActive {
		t.Errorf("the victim after refused calls: %+v, %v", tn, err)
	}
}

func keyIDOf(t *testing.T, key string) string {
	t.Helper()
	id, _, err := auth.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// revokeFailsOnce is the authenticator of a server killed as its first
// revocation of a tenant's keys returned: the keys are gone, and the
// deletion learns nothing of it.
type revokeFailsOnce struct {
	Keys
	failed atomic.Bool
}

func (r *revokeFailsOnce) RevokeTenant(ctx context.Context, tenantID string) ([]string, error) {
	ids, err := r.Keys.RevokeTenant(ctx, tenantID)
	if err == nil && r.failed.CompareAndSwap(false, true) {
		return nil, errors.New("killed")
	}
	return ids, err
}

// TestDeleteCountsKeysOnce: the keys a deletion removes are counted once
// even when the run that removed them was cut short before it went on:
// counted after the removal, the next run found none and recorded 0
// (e2e TestTenantLife, its server killed after the DELETE).
func TestDeleteCountsKeysOnce(t *testing.T) {
	f := newFixture(t)
	sbs := f.fill(t, 1)
	s, err := New(Config{Store: f.st, Keys: &revokeFailsOnce{Keys: f.auth}, Sandboxes: f.sbx, Events: f.events, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(f.admin, f.victim); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the failure is recorded", func(tn store.Tenant) bool { return tn.Deletion != nil && tn.Deletion.Error != "" })
	s.Close()
	if err := f.service(t).Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.checkGone(t, sbs) // Removed.Keys == 1 among the rest
}
