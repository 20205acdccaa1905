package sandbox

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// What a running or paused sandbox uses (GET /v1/sandboxes/{id}/metrics):
// read from its driver when asked, and sampled (SampleMetrics, which the
// metrics policy calls every tick) once every period into a short history
// kept with the live sandbox. The period is metricsEvery, stretched by
// sampleCost for each sandbox past the first metricsEvery/sampleCost: a
// sample reads a few files of each sandbox's cgroups, and the period
// grows with the fleet so that sampling costs the server a bounded share
// of one CPU (sampleCost over the period a sandbox) however many run.

const (
	// metricsEvery is the period of the samples of a fleet of up to
	// metricsEvery/sampleCost sandboxes.
	metricsEvery = 5 * time.Second
	// sampleCost is the stretch of the period per sandbox past those:
	// 5,000 sandboxes are sampled every 100 s. A sandbox's sample (six
	// cgroup files and its disk's) took about 1 ms of the server's CPU on
	// a 2-core VM, so sampling holds about 5 % of a core.
	sampleCost = 20 * time.Millisecond
	// metricsKeep is how many periods a history covers: 5 minutes.
	metricsKeep = 60
	// statsTimeout bounds one reading of a sandbox's use from its driver.
	statsTimeout = 2 * time.Second
	// percentSpan is the least time a CPU percent is taken over, where
	// the history allows: a shorter span measures little but noise.
	percentSpan = time.Second
)

// meterFigures are the figures a driver.Meter reads: all unsupported when
// the driver is none.
var meterFigures = []string{"cpu", "memory", "pids", "network"}

// metricRing is one sandbox's history: its samples, oldest first, at most
// metricsKeep+1 (each sample's CPU percent is over the span since the one
// before); the last reading Metrics kept, which a client that asks every
// second gets its CPU percent against; and its disk use as last measured.
type metricRing struct {
	points []point
	read   point
	disk   *api.DiskUsage
	diskAt time.Time
}

// percentBase is the point a CPU percent now is taken against: the newest
// of the samples and the last reading at least percentSpan old, or else
// the oldest; false when there is none.
func (mr *metricRing) percentBase(now time.Time) (point, bool) {
	var base, oldest point
	consider := func(p point) {
		if p.at.IsZero() {
			return
		}
		if oldest.at.IsZero() || p.at.Before(oldest.at) {
			oldest = p
		}
		if now.Sub(p.at) >= percentSpan && (base.at.IsZero() || p.at.After(base.at)) {
			base = p
		}
	}
	for _, p := range mr.points {
		consider(p)
	}
	consider(mr.read)
	if base.at.IsZero() {
		base = oldest
	}
	return base, !base.at.IsZero()
}

// point is what a sandbox had used by at.
type point struct {
	at     time.Time
	cpuNS  uint64
	memory int64
	pids   int
	rx, tx uint64
}

func pointOf(at time.Time, st driver.Stats) point {
	return point{at: at, cpuNS: st.CPUUsageNS, memory: st.MemoryBytes, pids: st.Pids, rx: st.RxBytes, tx: st.TxBytes}
}

// cpuPercent is the CPU the sandbox used between a and b, 100 for one
// core; 0 when its count went back (it started again in between).
func cpuPercent(a, b point) float64 {
	span := b.at.Sub(a.at)
	if span <= 0 || b.cpuNS < a.cpuNS {
		return 0
	}
	return float64(b.cpuNS-a.cpuNS) / float64(span.Nanoseconds()) * 100
}

// SampleDue reports whether now, with n sandboxes to sample, is in a
// period of the clock (samplePeriod) not sampled yet, and if so takes
// it: the caller then samples, once per period however often it asks.
func (s *Service) SampleDue(now time.Time, n int) bool {
	every := max(metricsEvery, time.Duration(n)*sampleCost).Truncate(time.Second)
	slot := now.Truncate(every)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sampleEvery = every
	if !slot.After(s.sampled) {
		return false
	}
	s.sampled = slot
	return true
}

// samplePeriod is the period of the samples as last set by SampleDue.
func (s *Service) samplePeriod() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.sampleEvery, metricsEvery)
}

// SampleMetrics takes one sample of each of recs, running or paused
// sandboxes this server owns.
func (s *Service) SampleMetrics(ctx context.Context, now time.Time, recs []*store.Sandbox) {
	for _, rec := range recs {
		lv := s.lookup(rec.ID)
		if lv == nil {
			continue
		}
		st, ok, err := s.readStats(ctx, rec)
		if err != nil {
			if !errors.Is(err, errdefs.ErrConflict) { // not stopped meanwhile
				s.log.Warn("sample a sandbox's metrics", logattr.Sandbox(rec.ID), "err", err)
			}
			continue
		}
		if !ok {
			continue
		}
		lv.mu.Lock()
		mr := &lv.metrics
		mr.points = append(mr.points, pointOf(now, st))
		if n := len(mr.points) - (metricsKeep + 1); n > 0 {
			mr.points = append(mr.points[:0], mr.points[n:]...)
		}
		lv.mu.Unlock()
	}
}

// readStats reads what rec uses from its driver; ok is false when the
// driver measures nothing.
func (s *Service) readStats(ctx context.Context, rec *store.Sandbox) (_ driver.Stats, ok bool, _ error) {
	d, err := s.drivers.of(rec)
	if err != nil {
		return driver.Stats{}, false, err
	}
	m, ok := d.(driver.Meter)
	if !ok {
		return driver.Stats{}, false, nil
	}
	h, err := s.handleOf(rec)
	if err != nil {
		return driver.Stats{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	st, err := m.Stats(ctx, h)
	if err != nil {
		return driver.Stats{}, false, err
	}
	return st, true, nil
}

// Metrics returns what a running or paused sandbox of the caller's uses
// now, and its history; a sandbox in another state is 409
// sandbox_not_running. It is no call through the door: it neither
// resumes a paused sandbox nor counts as its activity.
func (s *Service) Metrics(ctx context.Context, id string) (api.SandboxMetrics, error) {
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil {
		return api.SandboxMetrics{}, err
	}
	if rec.State != api.StateRunning && rec.State != api.StatePaused {
		return api.SandboxMetrics{}, notRunning(rec)
	}
	d, err := s.drivers.of(rec)
	if err != nil {
		return api.SandboxMetrics{}, err
	}
	st, ok, err := s.readStats(ctx, rec)
	switch {
	case errors.Is(err, errdefs.ErrConflict): // its agent is gone
		return api.SandboxMetrics{}, err
	case err != nil:
		return api.SandboxMetrics{}, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the %s driver could not measure sandbox %s", d.Name(), id)
	case !ok:
		st.Unsupported = slices.Clone(meterFigures)
	}
	now := time.Now()
	out := api.SandboxMetrics{
		SandboxID:    id,
		At:           now,
		CPU:          api.CPUStats{UsageNS: st.CPUUsageNS},
		Memory:       api.MemStats{UsageBytes: st.MemoryBytes, PeakBytes: st.MemoryPeak, LimitBytes: st.MemoryLimit},
		Pids:         api.PidStats{Current: st.Pids, Limit: st.PidsLimit},
		Network:      api.NetStats{RxBytes: st.RxBytes, TxBytes: st.TxBytes, RxPackets: st.RxPackets, TxPackets: st.TxPackets},
		SampleEveryS: int(s.samplePeriod() / time.Second),
		History:      []api.Sample{},
		Unsupported:  st.Unsupported,
	}
	if d.Capabilities().Limits.CPU {
		out.CPU.LimitCPUs = rec.Limits.CPU
	}
	if n, ok := s.observeOOM(ctx, rec); ok {
		out.Memory.OOMKills = n
	}
	if _, ok := d.(driver.DiskMeter); !ok {
		out.Unsupported = append(out.Unsupported, "disk")
	} else if u := s.metricsDisk(ctx, rec, now); u != nil {
		out.Disk = api.DiskStats{UsageBytes: u.UsedBytes, LimitBytes: u.LimitBytes}
	}

	lv := s.lookup(id)
	if lv == nil {
		return out, nil
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	mr := &lv.metrics
	points := mr.points
	for i := 1; i < len(points); i++ {
		p := points[i]
		out.History = append(out.History, api.Sample{At: p.at, CPUPercent: cpuPercent(points[i-1], p),
			MemoryBytes: p.memory, Pids: p.pids, RxBytes: p.rx, TxBytes: p.tx})
	}
	if ok {
		cur := pointOf(now, st)
		if base, found := mr.percentBase(now); found {
			out.CPU.Percent = cpuPercent(base, cur)
		}
		// Kept at most once per percentSpan, so that clients asking more
		// often still get a span of at least that.
		if now.Sub(mr.read.at) >= percentSpan {
			mr.read = cur
		}
	}
	return out, nil
}

// metricsDisk is what rec's files take, measured at most once per
// metricsEvery: where the filesystem keeps no count it is a walk of them,
// and a client may ask every second.
func (s *Service) metricsDisk(ctx context.Context, rec *store.Sandbox, now time.Time) *api.DiskUsage {
	lv := s.lookup(rec.ID)
	if lv != nil {
		lv.mu.Lock()
		u, at := lv.metrics.disk, lv.metrics.diskAt
		lv.mu.Unlock()
		if u != nil && now.Sub(at) < metricsEvery {
			return u
		}
	}
	u := s.DiskUsage(ctx, rec)
	if u != nil && lv != nil {
		lv.mu.Lock()
		lv.metrics.disk, lv.metrics.diskAt = u, now
		lv.mu.Unlock()
	}
	return u
}
