package quota

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/store/sqlite"
)

// fixture is a real store with one tenant, and its quotas.
type fixture struct {
	st     *sqlite.Store
	q      *Service
	tenant string
	ctx    context.Context // a member of the tenant
}

func newFixture(t *testing.T, defaults api.QuotaLimits) *fixture {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tn := store.Tenant{ID: ids.New(), Name: "t"}
	if err := st.CreateTenant(tenancy.System(context.Background()), tn); err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, q: New(Config{Store: st, Defaults: defaults}), tenant: tn.ID,
		ctx: tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, KeyID: "k", Role: api.RoleMember})}
}

// refused fails t unless err is 429 quota_exceeded naming quota.
func refused(t *testing.T, what string, err error, quota string) {
	t.Helper()
	if !errors.Is(err, errdefs.ErrRateLimited) || !errdefs.HasCode(err, "quota_exceeded") || !strings.Contains(err.Error(), "quota "+quota+" exceeded") {
		t.Fatalf("%s: %v; want 429 quota_exceeded naming %s", what, err, quota)
	}
}

// secret admits and writes one secret named name.
func (f *fixture) secret(name string) error {
	c, err := f.q.Admit(f.ctx, f.tenant, Ask{Secrets: 1}, nil)
	if err != nil {
		return err
	}
	defer c.Cancel()
	return c.Commit(f.ctx, nil, func() error {
		return f.st.CreateSecret(f.ctx, &store.Secret{Name: name, KeyID: "k", Nonce: []byte("n"), Ciphertext: []byte("c")})
	})
}

// snapshot admits a snapshot estimated at est bytes that turns out to
// take made bytes, and writes it.
func (f *fixture) snapshot(est, made int64) error {
	c, err := f.q.Admit(f.ctx, f.tenant, Ask{Snapshots: 1, SnapshotBytes: est}, nil)
	if err != nil {
		return err
	}
	defer c.Cancel()
	return c.Commit(f.ctx, &Ask{Snapshots: 1, SnapshotBytes: made}, func() error {
		return f.st.CreateSnapshot(f.ctx, &store.Snapshot{SandboxID: "sb", Template: "host", Driver: "namespace", Bytes: made})
	})
}

// TestAdmitRace: concurrent creates against each kind of quota admit
// exactly what fits, whatever the order, the bytes of a snapshot known
// only at its commit included, and a tenant's disk shared by kinds. Run
// it with -race.
func TestAdmitRace(t *testing.T) {
	const n, m = 16, 3
	for _, tt := range []struct {
		name   string
		limits api.QuotaLimits
		quota  string
		create func(f *fixture, i int) error
	}{
		{"secrets", api.QuotaLimits{Secrets: m}, "secrets", func(f *fixture, i int) error { return f.secret(fmt.Sprintf("S%d", i)) }},
		{"snapshot bytes, known at commit", api.QuotaLimits{SnapshotsMB: m}, "snapshots_mb", func(f *fixture, i int) error { return f.snapshot(0, 1<<20) }},
		{"disk, volumes and snapshots", api.QuotaLimits{DiskMB: 2 * m}, "disk_mb", func(f *fixture, i int) error {
			if i%2 == 0 {
				return f.snapshot(2<<20, 2<<20)
			}
			c, err := f.q.Admit(f.ctx, f.tenant, Ask{Volumes: 1, VolumeMB: 2}, nil)
			if err != nil {
				return err
			}
			defer c.Cancel()
			return c.Commit(f.ctx, nil, func() error { return f.st.CreateVolume(f.ctx, &store.Volume{Name: fmt.Sprintf("v%d", i), SizeMB: 2}) })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.limits)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					errs[i] = tt.create(f, i)
				})
			}
			close(start)
			wg.Wait()
			admitted := 0
			for _, err := range errs {
				if err == nil {
					admitted++
					continue
				}
				refused(t, "a create past the quota", err, tt.quota)
			}
			if admitted != m {
				t.Fatalf("%d of %d concurrent creates admitted; want %d", admitted, n, m)
			}
			if len(f.q.claims) != 0 || f.q.pending != (Amount{}) {
				t.Errorf("claims left: %v, pending %+v", f.q.claims, f.q.pending)
			}
		})
	}
}

// TestClaims: an admission in flight holds its room until it commits or
// gives up; what it really made is checked again at the commit; the
// server's defaults apply until the tenant's own quotas are set; 0 is no
// limit.
func TestClaims(t *testing.T) {
	f := newFixture(t, api.QuotaLimits{Snapshots: 2, SnapshotsMB: 10, Keys: 1})
	a, err := f.q.Admit(f.ctx, f.tenant, Ask{Snapshots: 1, SnapshotBytes: 4 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.q.Admit(f.ctx, f.tenant, Ask{Snapshots: 1, SnapshotBytes: 4 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.q.Admit(f.ctx, f.tenant, Ask{Snapshots: 1}, nil)
	refused(t, "a third snapshot while two are in flight", err, "snapshots")
	b.Cancel()
	b.Cancel()
	// a turns out to take 12 MiB, past the 10 allowed: nothing written.
	wrote := false
	err = a.Commit(f.ctx, &Ask{Snapshots: 1, SnapshotBytes: 12 << 20}, func() error { wrote = true; return nil })
	refused(t, "a snapshot larger than estimated", err, "snapshots_mb")
	if wrote {
		t.Fatal("a refused commit wrote its record")
	}
	a.Cancel() // after a commit: nothing
	if err := f.snapshot(6<<20, 6<<20); err != nil {
		t.Fatal(err)
	}
	err = f.snapshot(5<<20, 5<<20)
	refused(t, "snapshots past 10 MiB", err, "snapshots_mb")
	if !strings.Contains(err.Error(), "take 6 MiB of the 10 MiB allowed, and this one 5 MiB more") {
		t.Errorf("message %q does not say what is held and asked", err)
	}

	// A tenant's own quotas win over the defaults; 0 lifts one.
	zero, three := 0, 3
	if _, err := f.st.SetTenantQuotas(tenancy.System(f.ctx), f.tenant, api.Quotas{SnapshotsMB: &zero, Snapshots: &three}); err != nil {
		t.Fatal(err)
	}
	if err := f.snapshot(64<<20, 64<<20); err != nil {
		t.Fatalf("a snapshot with no limit of bytes: %v", err)
	}
	got, err := f.q.Quotas(f.ctx, f.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if got.Limits.Snapshots != 3 || got.Limits.SnapshotsMB != 0 || got.Limits.Keys != 1 || got.Usage.Snapshots != 2 ||
		got.Usage.SnapshotsMB != 70 || got.Usage.DiskMB != 70 || !got.DiskEnforced {
		t.Errorf("quotas %+v", got)
	}
	// Nothing of the tenant's and no limit: no quota is named.
	if err := f.snapshot(0, 0); err != nil {
		t.Fatal(err)
	}
	err = f.snapshot(0, 0)
	refused(t, "a fourth snapshot", err, "snapshots")
}

// TestDisk: a tenant's disk counts its sandboxes' files, snapshots,
// volumes and templates; once nothing is left every create that adds to
// it is refused, and one that adds nothing (a key) is not.
func TestDisk(t *testing.T) {
	f := newFixture(t, api.QuotaLimits{DiskMB: 8})
	sys := tenancy.System(f.ctx)
	sb := &store.Sandbox{TenantID: f.tenant, State: api.StateRunning, Template: "host", Driver: "process"}
	if err := f.st.CreateSandbox(sys, sb); err != nil {
		t.Fatal(err)
	}
	if err := f.st.SetSandboxDisk(sys, sb.ID, 8<<20); err != nil {
		t.Fatal(err)
	}
	for what, ask := range map[string]Ask{"a sandbox": {Sandboxes: 1}, "a snapshot": {Snapshots: 1}, "a volume": {Volumes: 1, VolumeMB: 1},
		"a template": {Templates: 1}} {
		_, err := f.q.Admit(f.ctx, f.tenant, ask, nil)
		refused(t, what+" on a full disk", err, "disk_mb")
		if !strings.Contains(err.Error(), "take 8 MiB of the 8 MiB allowed (sandboxes 8 MiB, snapshots 0 MiB, volumes 0 MiB, templates 0 MiB)") {
			t.Errorf("message %q", err)
		}
	}
	c, err := f.q.Admit(f.ctx, f.tenant, Ask{Keys: 1}, nil)
	if err != nil {
		t.Fatalf("a key on a full disk: %v", err)
	}
	c.Cancel()
	if err := f.st.SetSandboxDisk(sys, sb.ID, 4<<20); err != nil {
		t.Fatal(err)
	}
	_, err = f.q.Admit(f.ctx, f.tenant, Ask{Volumes: 1, VolumeMB: 5}, nil)
	refused(t, "a volume larger than what is left", err, "disk_mb")
	if c, err = f.q.Admit(f.ctx, f.tenant, Ask{Volumes: 1, VolumeMB: 4}, nil); err != nil {
		t.Fatalf("a volume that fits: %v", err)
	}
	c.Cancel()
}

// TestOpen: a tenant holds at most its quota of watches and of streams
// open, each given back when it ends; other tenants have their own.
func TestOpen(t *testing.T) {
	f := newFixture(t, api.QuotaLimits{Watches: 1, Streams: 2})
	w, err := f.q.Open(f.ctx, f.tenant, Watch)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.q.Open(f.ctx, f.tenant, Watch)
	refused(t, "a second watch", err, "watches")
	var streams []func()
	for range 2 {
		s, err := f.q.Open(f.ctx, f.tenant, Stream)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	_, err = f.q.Open(f.ctx, f.tenant, Stream)
	refused(t, "a third stream", err, "streams")
	got, _ := f.q.Quotas(f.ctx, f.tenant)
	if got.Usage.Watches != 1 || got.Usage.Streams != 2 {
		t.Errorf("usage %+v; want 1 watch and 2 streams", got.Usage)
	}
	w()
	w()
	if w, err = f.q.Open(f.ctx, f.tenant, Watch); err != nil {
		t.Fatalf("a watch once the first ended: %v", err)
	}
	w()
	for _, s := range streams {
		s()
	}
	if len(f.q.open) != 0 {
		t.Errorf("counts left once all ended: %v", f.q.open)
	}
	var none *Service
	release, err := none.Open(f.ctx, f.tenant, Stream)
	if err != nil {
		t.Fatal(err)
	}
	release()
}
