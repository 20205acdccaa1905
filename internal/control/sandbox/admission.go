package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/store"
)

// Admission. A create, and a start of a stopped sandbox, is admitted only
// when its tenant is active (403 tenant_suspended, tenant_deleted) and its
// quotas and this node's capacity have room for its limits:
//
//   - a tenant's quotas (store.Tenant.Quotas, else Config.TenantQuotas)
//     bound its sandboxes across every node: the number of them that are
//     neither destroyed nor failed (a stopped one keeps its place), and
//     the memory, CPU and pids limits of those that hold them (all but
//     the stopped ones). Past one: 429 quota_exceeded.
//   - Config.Capacity bounds what this node's sandboxes that hold
//     resources are promised together. Past it: 503 insufficient_capacity.
//
// A limit of 0 (one the driver does not enforce, so none was applied)
// counts as nothing. Disk quotas are recorded, not enforced.
//
// Admissions take turns on one mutex: each reads the usage from the store
// and writes the record (a create) or the transition to starting (a start)
// that claims the room before the next reads, so concurrent creates never
// share the last of a quota. The store has one writer (SQLite) anyway, so
// the lock costs a create little; it is taken after the sandbox's own lock
// and never the other way round. It serialises this process only: control
// planes sharing one store could each admit the last room of a tenant.

// Capacity is what this node may promise its live sandboxes together: the
// sum of their memory, CPU and pids limits. A zero field promises without
// bound.
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
	// threads-max, less the reserve), their CPU limits CPUOvercommit × the
	// host's CPUs. 0 sets no bound.
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

// holding are the states in which a sandbox holds its memory, CPU and
// pids (or may, while its driver is at work).
var holding = []api.SandboxState{api.StateCreating, api.StateStarting, api.StateRunning, api.StatePaused, api.StateStopping, api.StateDestroying}

// placed are the states that count toward a tenant's number of
// sandboxes: all but destroyed and failed.
var placed = append([]api.SandboxState{api.StateStopped}, holding...)

// cpuSlack absorbs the rounding of sums of fractional cores.
const cpuSlack = 1e-9

// admission admits sandboxes against their tenant's quotas and this
// node's capacity, one at a time.
type admission struct {
	store    store.Store
	node     string
	capacity Capacity
	quotas   api.QuotaLimits // of a tenant that set none
	log      *slog.Logger

	mu sync.Mutex // serialises admissions
}

// admit checks that a sandbox of tenantID with limits fits its tenant's
// quotas and this node's capacity (a new one also its tenant's number of
// sandboxes). On success it returns with the admission lock held: the
// caller writes the record or transition that claims the room, then calls
// release.
func (s *admission) admit(ctx context.Context, tenantID string, l api.Limits, isNew bool) (release func(), err error) {
	s.mu.Lock()
	defer func() {
		if err != nil {
			s.mu.Unlock()
		}
	}()
	sys := tenancy.System(ctx)
	t, err := s.store.GetTenant(sys, tenantID)
	if err != nil {
		return nil, err
	}
	if t.State != api.TenantActive {
		// A suspended tenant's sandboxes stay stopped; a deleted one's
		// are being destroyed. Its lock taken, a sandbox that a
		// suspension stops next is stopped after this call.
		return nil, store.TenantNotActive(t.State)
	}
	recs, err := s.store.AllSandboxes(sys, placed...)
	if err != nil {
		return nil, err
	}
	var tenant, node api.QuotaUsage
	for _, r := range recs {
		if r.TenantID == tenantID {
			count(&tenant, r)
		}
		if r.Node == s.node || r.Node == "" {
			count(&node, r)
		}
	}
	q := s.limitsOf(t.Quotas)
	refuse := func(quota, used, asked, limit string) error {
		s.log.Info("create refused: tenant quota", logattr.Tenant(tenantID), "quota", quota, "used", used, "asked", asked, "limit", limit)
		return errdefs.New(errdefs.ErrRateLimited, "quota_exceeded",
			"quota %s exceeded: this tenant's sandboxes hold %s of the %s allowed, and this one asks %s more; destroy some, or ask an admin to raise the quota", quota, used, limit, asked)
	}
	switch {
	case isNew && q.Sandboxes > 0 && tenant.Sandboxes+1 > q.Sandboxes:
		s.log.Info("create refused: tenant quota", logattr.Tenant(tenantID), "quota", "sandboxes", "used", tenant.Sandboxes, "limit", q.Sandboxes)
		return nil, errdefs.New(errdefs.ErrRateLimited, "quota_exceeded",
			"quota sandboxes exceeded: this tenant has %d sandboxes of the %d allowed (stopped ones count); destroy one, or ask an admin to raise the quota", tenant.Sandboxes, q.Sandboxes)
	case q.MemoryMB > 0 && tenant.MemoryMB+l.MemoryMB > q.MemoryMB:
		return nil, refuse("memory_mb", mib(tenant.MemoryMB), mib(l.MemoryMB), mib(q.MemoryMB))
	case q.CPU > 0 && tenant.CPU+l.CPU > q.CPU+cpuSlack:
		return nil, refuse("cpu", cores(tenant.CPU), cores(l.CPU), cores(q.CPU))
	case q.Pids > 0 && tenant.Pids+l.Pids > q.Pids:
		return nil, refuse("pids", strconv.Itoa(tenant.Pids)+" pids", strconv.Itoa(l.Pids)+" pids", strconv.Itoa(q.Pids)+" pids")
	}
	// Of the host, the user is told the bound, never what other tenants
	// hold; the log has it all.
	full := func(what, used, asked, limit, flag string) error {
		s.log.Warn("create refused: host capacity", logattr.Tenant(tenantID), "resource", what, "promised", used, "asked", asked, "capacity", limit)
		return errdefs.New(errdefs.ErrUnavailable, "insufficient_capacity",
			"this host cannot take %s more %s: its sandboxes may be promised %s together (%s) and that would pass it; ask for less, or try again once other sandboxes end", asked, what, limit, flag)
	}
	c := s.capacity
	switch {
	case c.MemoryMB > 0 && node.MemoryMB+l.MemoryMB > c.MemoryMB:
		return nil, full("memory", mib(node.MemoryMB), mib(l.MemoryMB), mib(c.MemoryMB), "--max-memory-overcommit of the host's memory less --reserve-memory-mb")
	case c.CPU > 0 && node.CPU+l.CPU > c.CPU+cpuSlack:
		return nil, full("cpu", cores(node.CPU), cores(l.CPU), cores(c.CPU), "--max-cpu-overcommit of the host's CPUs")
	case c.Pids > 0 && node.Pids+l.Pids > c.Pids:
		return nil, full("pids", strconv.Itoa(node.Pids), strconv.Itoa(l.Pids), strconv.Itoa(c.Pids), "--max-pids-overcommit of pid_max or threads-max less --reserve-pids")
	}
	return s.mu.Unlock, nil
}

// count adds r to u: to the number of sandboxes, and its limits when it
// holds them.
func count(u *api.QuotaUsage, r *store.Sandbox) {
	u.Sandboxes++
	if r.State == api.StateStopped {
		return
	}
	u.MemoryMB += r.Limits.MemoryMB
	u.CPU += r.Limits.CPU
	u.Pids += r.Limits.Pids
}

// limitsOf are the quotas in force: each one set, else the server's
// default.
func (s *admission) limitsOf(q api.Quotas) api.QuotaLimits {
	d := s.quotas
	return api.QuotaLimits{
		Sandboxes: or(q.Sandboxes, d.Sandboxes),
		MemoryMB:  or(q.MemoryMB, d.MemoryMB),
		CPU:       or(q.CPU, d.CPU),
		Pids:      or(q.Pids, d.Pids),
		DiskMB:    or(q.DiskMB, d.DiskMB),
	}
}

func or[T int | float64](set *T, def T) T {
	if set != nil {
		return *set
	}
	return def
}

func mib(n int) string { return strconv.Itoa(n) + " MiB" }

func cores(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) + " CPU" }

// Quotas returns a tenant's quotas, those in force and its usage. A
// tenant's own keys may read them, admins any tenant's (the store
// decides: another tenant is 404 tenant_not_found).
func (s *Service) Quotas(ctx context.Context, tenantID string) (api.TenantQuotas, error) {
	t, err := s.store.GetTenant(ctx, tenantID)
	if err != nil {
		return api.TenantQuotas{}, err
	}
	return s.admission.view(ctx, t)
}

// SetQuotas replaces a tenant's quotas (nil fields: the server's
// defaults). Admins only (the store decides). Sandboxes past a lowered
// quota keep running; the next create or start is refused.
func (s *Service) SetQuotas(ctx context.Context, tenantID string, q api.Quotas) (api.TenantQuotas, error) {
	t, err := s.store.SetTenantQuotas(ctx, tenantID, q)
	if err != nil {
		return api.TenantQuotas{}, err
	}
	p, _ := tenancy.From(ctx)
	s.log.Info("tenant quotas set", logattr.Tenant(tenantID), logattr.Key(p.KeyID), "quotas", fmt.Sprintf("%+v", s.admission.limitsOf(q)))
	return s.admission.view(ctx, t)
}

// view shows t's quotas and usage; the caller may read t.
func (s *admission) view(ctx context.Context, t store.Tenant) (api.TenantQuotas, error) {
	recs, err := s.store.AllSandboxes(tenancy.System(ctx), placed...)
	if err != nil {
		return api.TenantQuotas{}, err
	}
	out := api.TenantQuotas{TenantID: t.ID, Set: t.Quotas, Limits: s.limitsOf(t.Quotas)}
	for _, r := range recs {
		if r.TenantID == t.ID {
			count(&out.Usage, r)
		}
	}
	return out, nil
}
