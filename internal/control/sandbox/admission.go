package sandbox

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/store"
)

// Admission. A create, and a start of a stopped sandbox, is admitted only
// when its tenant is active (403 tenant_suspended, tenant_deleted) and its
// quotas and this node's capacity have room for it:
//
//   - its tenant's quotas (internal/control/quota) bound its sandboxes
//     across every node: the number of them that are neither destroyed
//     nor failed (a stopped one keeps its place), the memory, CPU and
//     pids limits of those that hold them (all but the stopped ones), and
//     its disk, which a new sandbox adds to (the bytes of the snapshot it
//     starts from). Past one: 429 quota_exceeded.
//   - Config.Capacity bounds what this node's sandboxes that hold
//     resources are promised together. Past it: 503 insufficient_capacity.
//
// A paused sandbox holds its memory and pids but no CPU (frozen, it runs
// on none), so its resume is admitted for its CPU limit as a start is.
// A limit of 0 (one the driver does not enforce, so none was applied)
// counts as nothing.
//
// Both are read from the store's counters (store.Usage), one row each
// whatever the number of sandboxes, under the quotas' one lock, which
// every admission of every kind takes: each reads the usage and the
// claims of the admissions in flight, and writes the record (a create) or
// the transition to starting (a start) that claims the room before the
// next reads (quota.Claim.Commit), so concurrent creates never share the
// last of a quota. It is taken after the sandbox's own lock and never the
// other way round.

// Capacity is what this node may promise its live sandboxes together: the
// sum of their memory, CPU and pids limits. A zero field promises without
// bound.
//
// Limits are ceilings, not use: an idle sandbox uses a few MiB and no CPU
// of its 512 MiB and 1 CPU. So hutch serve's defaults (internal/server/
// config) bound what would really exhaust a host and overcommit the
// rest, as Kubernetes schedules on requests rather than limits and Nomad
// oversubscribes memory:
//   - CPU is compressible: sandboxes share the cores by the kernel's
//     fair scheduler (each within its own cpu.max), so CPU limits are not
//     admitted against the host (--max-cpu-overcommit 0); an operator may
//     still bound them.
//   - Memory and pids are not: the namespace driver caps the sandboxes'
//     cgroup parent at the host's budget (hostinfo.Budget), so together
//     they can never take the reserve the control plane and the host
//     keep, whatever their limits promise; within it the memory policy
//     (internal/control/policy/memory.go) pauses idle sandboxes, then
//     stops paused ones, as available memory runs low, and admission
//     refuses new sandboxes below memory_critical_pct (pressed). Their
//     limits may therefore promise a multiple of the budget: 128 × for
//     memory, so a 24 GiB host admits 5,888 sandboxes at the default
//     512 MiB (about 4 MiB of real memory each at the full fleet), and
//     8 × for pids (the tasks budget of a 24 GiB host is threads-max's
//     196,608 less the reserve: 6,016 sandboxes at the default 256). The
//     bounds still refuse one key's promise of thousands of times the
//     host (184 sandboxes at the 16 GiB most one may ask).
type Capacity struct {
	MemoryMB int
	CPU      float64
	Pids     int
}

// HostLimits size a Capacity from a host's facts.
type HostLimits struct {
	// ReserveMemoryMB and ReservePids are kept for the control plane and
	// the host (hostinfo.Budget); the namespace driver caps its parent
	// cgroup at the same budget.
	ReserveMemoryMB int
	ReservePids     int
	// The overcommit factors: sandboxes' memory limits may total
	// MemoryOvercommit × the memory budget, their pids limits
	// PidsOvercommit × the tasks budget (the smaller of pid_max and
	// threads-max, less the reserve), the CPU limits of those not paused
	// CPUOvercommit × the host's CPUs. 0 sets no bound.
	MemoryOvercommit float64
	PidsOvercommit   float64
	CPUOvercommit    float64
}

// HostCapacity is what a host of facts f may promise under l.
func HostCapacity(f hostinfo.Facts, l HostLimits) Capacity {
	return Capacity{
		MemoryMB: int(l.MemoryOvercommit * float64(hostinfo.Budget(f.MemoryMB, l.ReserveMemoryMB))),
		Pids:     int(l.PidsOvercommit * float64(hostinfo.Budget(f.Tasks(), l.ReservePids))),
		CPU:      l.CPUOvercommit * float64(f.CPUs),
	}
}

// cpuSlack absorbs the rounding of sums of fractional cores.
const cpuSlack = 1e-9

// admission admits sandboxes against their tenant's quotas and this
// node's capacity.
type admission struct {
	store    store.Usage
	quotas   *quota.Service
	node     string
	capacity Capacity
	memory   func() (available, total uint64, err error)
	settings func() api.Settings // memory_critical_pct, live
	log      *slog.Logger
}

// admit admits a sandbox of tenantID with limits l: a new one (isNew) also
// counts toward its tenant's sandboxes and adds disk bytes, its files at
// the start. The caller writes the record or transition that takes the
// room through the claim's Commit, or Cancels it.
func (s *admission) admit(ctx context.Context, tenantID string, l api.Limits, isNew bool, disk int64) (*quota.Claim, error) {
	ask := quota.Ask{MemoryMB: l.MemoryMB, CPUMilli: store.Milli(l.CPU), Pids: l.Pids}
	if isNew {
		ask.Sandboxes, ask.SandboxDiskBytes = 1, disk
	}
	return s.quotas.Admit(ctx, tenantID, ask, func(pending quota.Amount) error {
		return s.fits(ctx, tenantID, l, pending)
	})
}

// admitResume admits the resume of a paused sandbox of tenantID with
// limits l: it takes back its CPU, which it held none of while paused.
func (s *admission) admitResume(ctx context.Context, tenantID string, l api.Limits) (*quota.Claim, error) {
	return s.admit(ctx, tenantID, api.Limits{CPU: l.CPU}, false, 0)
}

// fits checks that this node's capacity has room for limits l beside its
// sandboxes and the admissions in flight (pending).
func (s *admission) fits(ctx context.Context, tenantID string, l api.Limits, pending quota.Amount) error {
	if err := s.pressed(tenantID, l); err != nil {
		return err
	}
	c := s.capacity
	if c == (Capacity{}) {
		return nil
	}
	u, err := s.store.NodeUsage(tenancy.System(ctx), s.node)
	if err != nil {
		return err
	}
	memory, pids := u.MemoryMB+pending.MemoryMB, u.Pids+pending.Pids
	cpu := float64(u.CPUMilli+pending.CPUMilli) / 1000
	// Of the host, the user is told the bound, never what other tenants
	// hold; the log has it all.
	full := func(what, used, asked, limit, flag string) error {
		s.log.Warn("create refused: host capacity", logattr.Tenant(tenantID), "resource", what, "promised", used, "asked", asked, "capacity", limit)
		return errdefs.New(errdefs.ErrUnavailable, "insufficient_capacity",
			"this host cannot promise %s more: its sandboxes' %s limits may total %s (%s) and that would pass it; ask for less, or try again once other sandboxes end", asked, what, limit, flag)
	}
	// What is not asked for is not checked: a resume asks for CPU alone.
	switch {
	case c.MemoryMB > 0 && l.MemoryMB > 0 && memory+l.MemoryMB > c.MemoryMB:
		return full("memory", mib(memory), mib(l.MemoryMB), mib(c.MemoryMB), "--max-memory-overcommit of the host's memory less --reserve-memory-mb")
	case c.CPU > 0 && l.CPU > 0 && cpu+l.CPU > c.CPU+cpuSlack:
		return full("cpu", cores(cpu), cores(l.CPU), cores(c.CPU), "--max-cpu-overcommit of the host's CPUs, paused sandboxes not counted")
	case c.Pids > 0 && l.Pids > 0 && pids+l.Pids > c.Pids:
		return full("pids", tasks(pids), tasks(l.Pids), tasks(c.Pids), "--max-pids-overcommit of pid_max or threads-max less --reserve-pids")
	}
	return nil
}

// pressed refuses a sandbox that would add memory (a create or a start)
// while the host has less available than memory_critical_pct, where the
// memory policy stops paused sandboxes to free it: limits are
// overcommitted, so what is really used is admitted against too. An
// unreadable host admits.
func (s *admission) pressed(tenantID string, l api.Limits) error {
	critical := s.settings().MemoryCriticalPct
	if critical == 0 || l.MemoryMB == 0 {
		return nil
	}
	avail, total, err := s.memory()
	if err != nil || total == 0 {
		s.log.Warn("admission: read the host's memory", "err", err)
		return nil
	}
	pct := int(avail * 100 / total)
	if pct >= critical {
		return nil
	}
	s.log.Warn("create refused: host memory", logattr.Tenant(tenantID), "available_pct", pct, "memory_critical_pct", critical)
	return errdefs.New(errdefs.ErrUnavailable, "insufficient_capacity",
		"this host has %d%% of its memory available, below memory_critical_pct (%d%%), and is stopping paused sandboxes to free memory; it takes no new sandbox until then, try again later", pct, critical)
}

func mib(n int) string { return strconv.Itoa(n) + " MiB" }

func tasks(n int) string { return strconv.Itoa(n) + " pids" }

func cores(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) + " CPU" }
