package policy

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
	"github.com/hutchdev/hutch/internal/store"
)

// newDiskFixture is a fixture whose driver measures its sandboxes' files
// and has no quota to cap them (fake.Disk: what SetDisk sets), with
// tenants' quotas l.
func newDiskFixture(t *testing.T, l api.QuotaLimits) (*fixture, *fake.Driver) {
	t.Helper()
	var drv *fake.Driver
	f := newFixture(t, func(c *sandbox.Config) {
		drv = c.Drivers.Default().(*fake.Driver)
		c.Drivers = driver.Single(fake.Disk{Driver: drv})
		c.Quotas = quota.New(quota.Config{Store: c.Store, Defaults: l})
	})
	return f, drv
}

// TestDiskLimitStops: on a filesystem without quotas a sandbox's disk
// limit is taken all the same; once its files pass it, the disk policy
// records sandbox.disk_full and stops it (its files kept), and its
// tenant's disk counts what was measured.
func TestDiskLimitStops(t *testing.T) {
	f, drv := newDiskFixture(t, api.QuotaLimits{})
	sb, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{Limits: &api.Limits{DiskMB: 16}})
	if err != nil {
		t.Fatalf("a disk limit where the driver only measures: %v", err)
	}
	if len(sb.UnenforcedLimits) != 0 {
		t.Errorf("unenforced limits %v; the disk policy holds disk_mb", sb.UnenforcedLimits)
	}
	sys, now := tenancy.System(f.ctx), time.Now()
	if err := drv.SetDisk(sb.ID, 8<<20); err != nil {
		t.Fatal(err)
	}
	f.tickDisk(t, sys, now)
	if st := f.state(t, sb.ID); st != api.StateRunning {
		t.Fatalf("under its limit the sandbox is %s", st)
	}
	tenant, _ := tenancy.From(f.ctx)
	if q, err := f.svc.Config().Quotas.Quotas(f.ctx, tenant.TenantID); err != nil || q.Usage.DiskMB != 8 {
		t.Fatalf("the tenant's disk after a measurement: %+v, %v; want 8 MiB", q.Usage, err)
	}
	got, err := f.svc.Get(f.ctx, sb.ID)
	if err != nil || got.Disk == nil || got.Disk.LimitBytes != 16<<20 || got.Disk.Enforcement != api.DiskEnforcedByStop {
		t.Fatalf("the sandbox's disk: %+v, %v; want a 16 MiB limit held by a stop", got.Disk, err)
	}

	if err := drv.SetDisk(sb.ID, 20<<20); err != nil {
		t.Fatal(err)
	}
	f.tickDisk(t, sys, now.Add(time.Second))
	if st := f.state(t, sb.ID); st != api.StateStopped {
		t.Fatalf("past its limit the sandbox is %s; want stopped", st)
	}
	f.waitEvent(t, sb.ID, api.EventSandboxDiskFull, func(store.Event) bool { return true })
	e := f.waitEvent(t, sb.ID, api.EventSandboxStopped, reasonOf(sandbox.ReasonDiskLimit))
	if !strings.Contains(e.Message, "20 MiB, past its disk limit of 16 MiB") {
		t.Errorf("stop message %q", e.Message)
	}
	// Its files stay, and count for its tenant.
	if q, _ := f.svc.Config().Quotas.Quotas(f.ctx, tenant.TenantID); q.Usage.DiskMB != 20 {
		t.Errorf("the tenant's disk once the sandbox stopped: %d MiB; want 20", q.Usage.DiskMB)
	}
}

// TestDiskQuotaStops: a tenant past its disk_mb quota is refused what
// adds to its disk, and its sandbox that grows is stopped, on a
// filesystem without quotas; another tenant goes on.
func TestDiskQuotaStops(t *testing.T) {
	f, drv := newDiskFixture(t, api.QuotaLimits{DiskMB: 32})
	hog := f.create(t)
	quiet := f.create(t)
	sys, now := tenancy.System(f.ctx), time.Now()
	if err := drv.SetDisk(quiet.ID, 2<<20); err != nil {
		t.Fatal(err)
	}
	f.tickDisk(t, sys, now)
	if err := drv.SetDisk(hog.ID, 40<<20); err != nil {
		t.Fatal(err)
	}
	f.tickDisk(t, sys, now.Add(time.Second))
	if st := f.state(t, hog.ID); st != api.StateStopped {
		t.Fatalf("the sandbox that grew past its tenant's disk is %s; want stopped", st)
	}
	f.waitEvent(t, hog.ID, api.EventSandboxStopped, reasonOf(sandbox.ReasonDiskQuota))
	if st := f.state(t, quiet.ID); st != api.StateRunning {
		t.Errorf("the sandbox that did not grow is %s; want running", st)
	}
	_, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{})
	if !errdefs.HasCode(err, "quota_exceeded") || !strings.Contains(err.Error(), "quota disk_mb exceeded") {
		t.Fatalf("a create past the tenant's disk: %v; want 429 quota_exceeded naming disk_mb", err)
	}
	// Another tenant's create is not refused.
	other := f.tenant(t, "other")
	if _, err := f.svc.Create(other, api.CreateSandboxRequest{}); err != nil {
		t.Fatalf("another tenant's create: %v", err)
	}
	// Once the files are gone, creates work again.
	if err := f.svc.Destroy(f.ctx, hog.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Create(f.ctx, api.CreateSandboxRequest{}); err != nil {
		t.Fatalf("a create once the tenant's disk was freed: %v", err)
	}
}

// tenant makes another tenant and returns a member's context in it.
func (f *fixture) tenant(t *testing.T, name string) context.Context {
	t.Helper()
	tn := store.Tenant{ID: ids.New(), Name: name}
	if err := f.st.CreateTenant(tenancy.System(context.Background()), tn); err != nil {
		t.Fatal(err)
	}
	return tenancy.With(context.Background(), tenancy.Principal{TenantID: tn.ID, Role: api.RoleMember})
}

// TestDiskBudget: measuring costs at most its share of the time, however
// many sandboxes run: each tick measures the ones it has time for, going
// round from where the last stopped, so every sandbox is measured in
// turn; a sandbox that stops is measured once more.
func TestDiskBudget(t *testing.T) {
	old := diskBurst
	diskBurst = 100 * time.Millisecond
	t.Cleanup(func() { diskBurst = old })
	f, drv := newDiskFixture(t, api.QuotaLimits{})
	var sbs []string
	for range 6 {
		sbs = append(sbs, f.create(t).ID)
	}
	var (
		mu       sync.Mutex
		measured = map[string]int{}
	)
	drv.Hook(fake.OpDisk, func(ctx context.Context, id string) error {
		mu.Lock()
		measured[id]++
		mu.Unlock()
		time.Sleep(40 * time.Millisecond) // a walk of a large tree
		return nil
	})
	count := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range measured {
			n += c
		}
		return n
	}
	sys, now := tenancy.System(f.ctx), time.Now()
	f.tickDisk(t, sys, now) // the burst saved at the start: 100 ms
	if n := count(); n > 3 {
		t.Fatalf("first tick measured %d sandboxes on a budget of 100 ms; want at most 3", n)
	}
	// A second a tick earns 50 ms: about one 40 ms walk each.
	for i := 1; i <= 12; i++ {
		before := count()
		f.tickDisk(t, sys, now.Add(time.Duration(i)*time.Second))
		if n := count() - before; n > 2 {
			t.Fatalf("tick %d measured %d sandboxes on a budget of 50 ms; want at most 2", i, n)
		}
	}
	mu.Lock()
	for _, id := range sbs {
		if measured[id] < 2 {
			t.Errorf("sandbox %s measured %d times in 13 ticks; want every one in turn", id, measured[id])
		}
	}
	mu.Unlock()

	if _, err := f.svc.Stop(f.ctx, sbs[0]); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	before := measured[sbs[0]]
	mu.Unlock()
	f.tickDisk(t, sys, now.Add(20*time.Second))
	f.tickDisk(t, sys, now.Add(21*time.Second))
	mu.Lock()
	after := measured[sbs[0]]
	mu.Unlock()
	if after != before+1 {
		t.Errorf("a stopped sandbox measured %d times more; want once", after-before)
	}
}
