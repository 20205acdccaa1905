// Package quota owns the tenants' quotas: the limits in force on each
// (set on the tenant, else the server's default), what each holds against
// them, and admission. Every create of what a tenant keeps (a sandbox, a
// snapshot, a volume, a template, an app, a key, a secret) is admitted
// here before its record is written (admit.go), and every watch and
// stream a tenant's key opens takes a place here until it ends (open.go).
// A refusal is 429 quota_exceeded, its message naming the quota, what the
// tenant holds and the limit.
//
// What a tenant holds comes from the store (store.Usage: counters and
// indexed counts, so nothing here grows with the number of sandboxes)
// and from the admissions in flight, which hold their room as a Claim
// from the moment they are admitted until the record that takes the room
// is written. One mutex serialises admissions, of every kind and tenant:
// two creates at a limit never both pass, and a tenant's disk (sandboxes,
// snapshots, volumes and templates together) is one quota whatever
// creates race for it. It serialises this process only; on a store that
// control planes share (store.Admitter, Postgres) each write is checked
// again under the tenant's lock in the store (Claim.Commit), so their
// creates never pass a limit together either.
//
// Admit and Open of a nil *Service admit everything and count nothing
// (tests of parts that have no quotas to hold).
package quota

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// Store is what the quotas read: the tenants (their quotas) and usage.
type Store interface {
	store.Tenants
	store.Usage
}

// Config is what the service needs.
type Config struct {
	Store Store
	// Defaults are the quotas of a tenant that set none (a zero field:
	// no limit): hutch serve --tenant-*.
	Defaults api.QuotaLimits
	Log      *slog.Logger
}

// Service holds the quotas. Safe for concurrent use.
type Service struct {
	store    Store
	defaults api.QuotaLimits
	log      *slog.Logger

	mu sync.Mutex
	// claims are what the admissions in flight hold, by tenant; pending
	// is all of them together (this node's: a sandbox's claim is its
	// node's too).
	claims  map[string]Amount
	pending Amount
	// open are the watches and streams open on this server, by tenant.
	open map[string]*[kinds]int
}

// New returns the service.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: cfg.Store, defaults: cfg.Defaults, log: cfg.Log,
		claims: map[string]Amount{}, open: map[string]*[kinds]int{}}
}

// Limits are the quotas in force on a tenant that set q: each one set,
// else the server's default.
func (s *Service) Limits(q api.Quotas) api.QuotaLimits {
	d := s.defaults
	return api.QuotaLimits{
		Sandboxes:   or(q.Sandboxes, d.Sandboxes),
		MemoryMB:    or(q.MemoryMB, d.MemoryMB),
		CPU:         or(q.CPU, d.CPU),
		Pids:        or(q.Pids, d.Pids),
		DiskMB:      or(q.DiskMB, d.DiskMB),
		Snapshots:   or(q.Snapshots, d.Snapshots),
		SnapshotsMB: or(q.SnapshotsMB, d.SnapshotsMB),
		Volumes:     or(q.Volumes, d.Volumes),
		VolumesMB:   or(q.VolumesMB, d.VolumesMB),
		Templates:   or(q.Templates, d.Templates),
		TemplatesMB: or(q.TemplatesMB, d.TemplatesMB),
		Apps:        or(q.Apps, d.Apps),
		Keys:        or(q.Keys, d.Keys),
		Secrets:     or(q.Secrets, d.Secrets),
		Watches:     or(q.Watches, d.Watches),
		Streams:     or(q.Streams, d.Streams),
	}
}

func or[T int | float64](set *T, def T) T {
	if set != nil {
		return *set
	}
	return def
}

// Quotas returns a tenant's quotas, those in force and its usage. A
// tenant's own keys may read them, admins any tenant's (the store
// decides: another tenant is 404 tenant_not_found).
func (s *Service) Quotas(ctx context.Context, tenantID string) (api.TenantQuotas, error) {
	t, err := s.store.GetTenant(ctx, tenantID)
	if err != nil {
		return api.TenantQuotas{}, err
	}
	return s.view(ctx, t)
}

// SetQuotas replaces a tenant's quotas (nil fields: the server's
// defaults). Admins only (the store decides). What a tenant holds past a
// lowered quota stays; its next create is refused.
func (s *Service) SetQuotas(ctx context.Context, tenantID string, q api.Quotas) (api.TenantQuotas, error) {
	t, err := s.store.SetTenantQuotas(ctx, tenantID, q)
	if err != nil {
		return api.TenantQuotas{}, err
	}
	p, _ := tenancy.From(ctx)
	s.log.Info("tenant quotas set", logattr.Tenant(tenantID), logattr.Key(p.KeyID), "quotas", fmt.Sprintf("%+v", s.Limits(q)))
	return s.view(ctx, t)
}

// Disk is what tenantID has on disk (its sandboxes' files as last
// measured, its snapshots, volumes and templates) and its disk_mb quota
// in bytes (0: no limit).
func (s *Service) Disk(ctx context.Context, tenantID string) (used, limit int64, err error) {
	sys := tenancy.System(ctx)
	t, err := s.store.GetTenant(sys, tenantID)
	if err != nil {
		return 0, 0, err
	}
	u, err := s.store.TenantUsage(sys, tenantID)
	if err != nil {
		return 0, 0, err
	}
	return u.DiskBytes(), int64(s.Limits(t.Quotas).DiskMB) << 20, nil
}

// view shows t's quotas and usage; the caller may read t.
func (s *Service) view(ctx context.Context, t store.Tenant) (api.TenantQuotas, error) {
	u, err := s.store.TenantUsage(ctx, t.ID)
	if err != nil {
		return api.TenantQuotas{}, err
	}
	out := api.TenantQuotas{TenantID: t.ID, Set: t.Quotas, Limits: s.Limits(t.Quotas), DiskEnforced: true,
		Usage: api.QuotaUsage{
			Sandboxes: u.Sandboxes, MemoryMB: u.MemoryMB, CPU: float64(u.CPUMilli) / 1000, Pids: u.Pids,
			DiskMB:    mibUp(u.DiskBytes()),
			Snapshots: u.Snapshots, SnapshotsMB: mibUp(u.SnapshotBytes),
			Volumes: u.Volumes, VolumesMB: int(u.VolumeMB),
			Templates: u.Templates, TemplatesMB: mibUp(u.TemplateBytes),
			Apps: u.Apps, Keys: u.Keys, Secrets: u.Secrets,
		}}
	s.mu.Lock()
	if o := s.open[t.ID]; o != nil {
		out.Usage.Watches, out.Usage.Streams = o[Watch], o[Stream]
	}
	s.mu.Unlock()
	return out, nil
}

// mibUp is n bytes in MiB, rounded up.
func mibUp(n int64) int { return int((n + 1<<20 - 1) >> 20) }
