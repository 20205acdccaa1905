package sandbox

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/fake"
)

// setStats makes the fake report st for sandbox id.
func (f *liveFixture) setStats(t *testing.T, id string, st driver.Stats) {
	t.Helper()
	if err := f.drv.SetStats(id, st); err != nil {
		t.Fatal(err)
	}
}

func (f *liveFixture) metrics(t *testing.T, id string) api.SandboxMetrics {
	t.Helper()
	m, err := f.svc.Metrics(f.ctx, id)
	if err != nil {
		t.Fatalf("Metrics: %v", err)
	}
	return m
}

// hasHistory says whether the service keeps samples of sandbox id.
func (s *Service) hasHistory(id string) bool {
	lv := s.lookup(id)
	if lv == nil {
		return false
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return len(lv.metrics.points) > 0
}

// TestMetrics: a running sandbox's figures are its driver's; the loop
// samples it once per period however often it ticks, into a bounded
// history whose CPU percent is the CPU time between samples; the percent
// now is over the time since the last sample; a stopped sandbox is 409 and
// loses its history, another tenant's 404.
func TestMetrics(t *testing.T) {
	f := newLiveFixture(t, nil)
	sys := tenancy.System(context.Background())
	sb := f.create(t)
	use := driver.Stats{CPUUsageNS: 1e9, MemoryBytes: 64 << 20, MemoryPeak: 80 << 20, MemoryLimit: 256 << 20,
		Pids: 3, PidsLimit: 64, RxBytes: 10, TxBytes: 20, RxPackets: 1, TxPackets: 2}
	f.setStats(t, sb.ID, use)
	m := f.metrics(t, sb.ID)
	want := api.SandboxMetrics{
		SandboxID:    sb.ID,
		CPU:          api.CPUStats{UsageNS: 1e9, LimitCPUs: 1},
		Memory:       api.MemStats{UsageBytes: 64 << 20, PeakBytes: 80 << 20, LimitBytes: 256 << 20},
		Pids:         api.PidStats{Current: 3, Limit: 64},
		Network:      api.NetStats{RxBytes: 10, TxBytes: 20, RxPackets: 1, TxPackets: 2},
		SampleEveryS: 5,
		History:      []api.Sample{},
		Unsupported:  []string{"disk"}, // the fake is no DiskMeter
	}
	if diff := cmp.Diff(want, m, cmpopts.IgnoreFields(api.SandboxMetrics{}, "At")); diff != "" {
		t.Fatalf("Metrics (-want +got):\n%s", diff)
	}

	// An hour ago, a sample every period at half a core, the loop
	// ticking twice in each. The read above is forgotten: the loop sets
	// CPU time an hour's worth past it, and on a loaded machine it takes
	// more than percentSpan, after which that read, not the loop's last
	// sample, is the base of the percent now.
	lv := f.svc.lookup(sb.ID)
	lv.mu.Lock()
	lv.metrics.read = point{}
	lv.mu.Unlock()
	start := time.Now().Add(-time.Hour).Truncate(metricsEvery)
	periods := metricsKeep + 10
	for i := range periods {
		use.CPUUsageNS = 1e9 + uint64(i)*uint64(metricsEvery/2)
		use.Pids = i
		f.setStats(t, sb.ID, use)
		at := start.Add(time.Duration(i) * metricsEvery)
		sample(t, f.svc, sys, at)
		sample(t, f.svc, sys, at.Add(time.Second))
	}
	m = f.metrics(t, sb.ID)
	if len(m.History) != metricsKeep {
		t.Fatalf("%d samples in the history, want the last %d", len(m.History), metricsKeep)
	}
	for i, s := range m.History {
		wantAt := start.Add(time.Duration(periods-metricsKeep+i) * metricsEvery)
		if !s.At.Equal(wantAt) || s.CPUPercent != 50 || s.Pids != periods-metricsKeep+i || s.MemoryBytes != 64<<20 {
			t.Fatalf("sample %d = %+v; want one at %v, 50%% CPU, %d pids", i, s, wantAt, periods-metricsKeep+i)
		}
	}
	if m.CPU.Percent != 0 {
		t.Errorf("CPU percent now = %v with no CPU time since the last sample; want 0", m.CPU.Percent)
	}
	use.CPUUsageNS += 1e9
	f.setStats(t, sb.ID, use)
	if m = f.metrics(t, sb.ID); m.CPU.Percent <= 0 {
		t.Errorf("CPU percent now = %v after CPU time since the last sample; want more than 0", m.CPU.Percent)
	}

	other := tenancy.With(context.Background(), tenancy.Principal{TenantID: ids.New(), Role: api.RoleReader})
	if _, err := f.svc.Metrics(other, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("another tenant's Metrics = %v; want not found", err)
	}

	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Metrics(f.ctx, sb.ID); !errors.Is(err, errdefs.ErrConflict) || !errdefs.HasCode(err, "sandbox_not_running") {
		t.Fatalf("Metrics of a stopped sandbox = %v; want 409 sandbox_not_running", err)
	}
	sample(t, f.svc, sys, time.Now())
	if f.svc.hasHistory(sb.ID) {
		t.Errorf("a stopped sandbox's history is kept")
	}
	if _, err := f.svc.Start(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if m = f.metrics(t, sb.ID); len(m.History) != 0 || m.CPU.Percent != 0 {
		t.Errorf("after a restart: history %+v, CPU %v%%; want it empty", m.History, m.CPU.Percent)
	}
}

// TestMetricsPaused: a paused sandbox is measured and sampled, and stays
// paused: reading its use is no call that wakes it.
func TestMetricsPaused(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := f.svc.Pause(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	f.setStats(t, sb.ID, driver.Stats{CPUUsageNS: 7})
	if m := f.metrics(t, sb.ID); m.CPU.UsageNS != 7 {
		t.Errorf("a paused sandbox's CPU time = %d, want 7", m.CPU.UsageNS)
	}
	sample(t, f.svc, tenancy.System(context.Background()), time.Now())
	if !f.svc.hasHistory(sb.ID) {
		t.Errorf("a paused sandbox is not sampled")
	}
	if got := f.state(t, sb.ID); got != api.StatePaused || !f.drv.Paused(sb.ID) {
		t.Errorf("after its metrics were read the sandbox is %s (driver paused: %v); want paused", got, f.drv.Paused(sb.ID))
	}
}

// unmetered is a driver that measures nothing.
type unmetered struct{ driver.Driver }

// TestMetricsUnsupported: with a driver that measures nothing, Metrics
// names every figure unsupported and the loop keeps no history; a driver
// that fails to measure is 503 driver_failed, and the loop goes on.
func TestMetricsUnsupported(t *testing.T) {
	f := newLiveFixture(t, func(c *Config) { c.Drivers = driver.Single(unmetered{c.Drivers.Default()}) })
	sys := tenancy.System(context.Background())
	sb := f.create(t)
	m := f.metrics(t, sb.ID)
	if want := []string{"cpu", "memory", "pids", "network", "disk"}; !slices.Equal(m.Unsupported, want) {
		t.Errorf("Unsupported = %q, want %q", m.Unsupported, want)
	}
	sample(t, f.svc, sys, time.Now())
	if f.svc.hasHistory(sb.ID) {
		t.Errorf("history kept of a sandbox whose driver measures nothing")
	}

	g := newLiveFixture(t, nil)
	sb = g.create(t)
	g.drv.Hook(fake.OpStats, func(context.Context, string) error { return errors.New("cgroup gone") })
	if _, err := g.svc.Metrics(g.ctx, sb.ID); !errors.Is(err, errdefs.ErrUnavailable) || !errdefs.HasCode(err, "driver_failed") {
		t.Errorf("Metrics with a failing driver = %v; want 503 driver_failed", err)
	}
	sample(t, g.svc, sys, time.Now())
	if g.svc.hasHistory(sb.ID) {
		t.Errorf("a sample was kept of a failed reading")
	}
}

// TestMetricsConcurrent reads metrics while the loop samples and the
// sandbox is paused and resumed, for the race detector.
func TestMetricsConcurrent(t *testing.T) {
	f := newLiveFixture(t, nil)
	sys := tenancy.System(context.Background())
	sb := f.create(t)
	start := time.Now().Add(-time.Hour)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 50 {
			sample(t, f.svc, sys, start.Add(time.Duration(i)*metricsEvery))
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := f.svc.Metrics(f.ctx, sb.ID); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() { // the live sandbox suspended and attached again
		for range 5 {
			if _, err := f.svc.Pause(f.ctx, sb.ID); err != nil {
				t.Error(err)
			}
			if _, err := f.svc.Resume(f.ctx, sb.ID); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
}

// TestPercentBase: the CPU percent now is over the newest sample or
// reading at least percentSpan old, else over the oldest there is.
func TestPercentBase(t *testing.T) {
	now := time.Now()
	ago := func(d time.Duration) point { return point{at: now.Add(-d), cpuNS: uint64(d)} }
	for _, tc := range []struct {
		name   string
		ring   metricRing
		want   point
		exists bool
	}{
		{"nothing", metricRing{}, point{}, false},
		{"a recent reading alone", metricRing{read: ago(100 * time.Millisecond)}, ago(100 * time.Millisecond), true},
		{"the newest old enough sample", metricRing{points: []point{ago(15 * time.Second), ago(10 * time.Second), ago(500 * time.Millisecond)}}, ago(10 * time.Second), true},
		{"a reading newer than the samples", metricRing{points: []point{ago(5 * time.Second)}, read: ago(2 * time.Second)}, ago(2 * time.Second), true},
		{"a reading too recent", metricRing{points: []point{ago(5 * time.Second)}, read: ago(300 * time.Millisecond)}, ago(5 * time.Second), true},
	} {
		got, ok := tc.ring.percentBase(now)
		if ok != tc.exists || !got.at.Equal(tc.want.at) || got.cpuNS != tc.want.cpuNS {
			t.Errorf("%s: percentBase = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.exists)
		}
	}
}

// sample samples the service's running and paused sandboxes as the
// policies' tick does: when a period is due.
func sample(t *testing.T, svc *Service, ctx context.Context, now time.Time) {
	t.Helper()
	if !svc.SampleDue(now, 1) {
		return
	}
	recs, err := svc.Owned(ctx, api.StateRunning, api.StatePaused)
	if err != nil {
		t.Fatal(err)
	}
	svc.SampleMetrics(ctx, now, recs)
}

// The samples' period grows with the fleet past metricsEvery/sampleCost
// sandboxes, so sampling every sandbox's cgroups costs a bounded share of
// a CPU, and the metrics say which period they come from.
func TestSamplePeriodGrowsWithFleet(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	start := time.Unix(0, 0).Add(1000 * time.Hour) // at the start of every period
	if !f.svc.SampleDue(start, 5000) {
		t.Fatal("first sample of 5,000 sandboxes not due")
	}
	if f.svc.SampleDue(start.Add(90*time.Second), 5000) {
		t.Error("5,000 sandboxes sampled again 90 s on; want every 100 s")
	}
	if !f.svc.SampleDue(start.Add(100*time.Second), 5000) {
		t.Error("5,000 sandboxes not sampled 100 s on")
	}
	m, err := f.svc.Metrics(f.ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.SampleEveryS != 100 {
		t.Errorf("sample_every_s = %d with 5,000 sandboxes; want 100", m.SampleEveryS)
	}
	if !f.svc.SampleDue(start.Add(130*time.Second), 10) || f.svc.SampleDue(start.Add(134*time.Second), 10) {
		t.Error("10 sandboxes: want a sample every 5 s")
	}
}
