package store

import (
	"context"
	"math"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Tenants keeps the tenants, which own every other resource.
type Tenants interface {
	// CreateTenant creates a tenant and, in the same transaction, its
	// initial keys (whose TenantID must be the tenant's). Only an admin
	// principal or the system may create tenants.
	CreateTenant(ctx context.Context, t Tenant, keys ...Key) error
	// GetTenant returns the caller's own tenant; admins and the system may
	// read any tenant.
	GetTenant(ctx context.Context, id string) (Tenant, error)
	// ListTenants returns every tenant, oldest first. Admin or system only.
	ListTenants(ctx context.Context) ([]Tenant, error)
	// SetTenantQuotas replaces a tenant's quotas (CheckQuotas) and returns
	// the tenant as written. Admin or system only: a tenant's own keys may
	// read its quotas (GetTenant) but never change them.
	SetTenantQuotas(ctx context.Context, id string, q api.Quotas) (Tenant, error)
}

// Tenant owns every other resource.
type Tenant struct {
	ID        string
	Name      string // unique
	CreatedAt time.Time
	// Quotas are what an admin set on the tenant; a nil field follows the
	// server's default (the sandbox service applies them at admission).
	Quotas api.Quotas
}

// CheckQuotas refuses a quota that is negative or, for CPU, not a finite
// number (400 invalid_quota). Zero is no limit; nil is the server's
// default.
func CheckQuotas(q api.Quotas) error {
	for _, f := range QuotaCounts(&q) {
		if v := *f.Value; v != nil && *v < 0 {
			return errdefs.Invalid("invalid_quota", "quota %s must be 0 (no limit) or positive, not %d", f.Name, *v)
		}
	}
	if c := q.CPU; c != nil && (*c < 0 || math.IsNaN(*c) || math.IsInf(*c, 0)) {
		return errdefs.Invalid("invalid_quota", "quota cpu must be 0 (no limit) or a positive number of cores")
	}
	return nil
}

// QuotaCount is one whole-number quota of a tenant: its name (the JSON
// field's, and the column's after "quota_") and where it is kept.
type QuotaCount struct {
	Name  string
	Value **int
}

// QuotaCounts are q's whole-number quotas (all but cpu), in the order of
// the tenants table's columns.
func QuotaCounts(q *api.Quotas) []QuotaCount {
	return []QuotaCount{
		{"sandboxes", &q.Sandboxes}, {"memory_mb", &q.MemoryMB}, {"pids", &q.Pids}, {"disk_mb", &q.DiskMB},
		{"snapshots", &q.Snapshots}, {"snapshots_mb", &q.SnapshotsMB}, {"volumes", &q.Volumes}, {"volumes_mb", &q.VolumesMB},
		{"templates", &q.Templates}, {"templates_mb", &q.TemplatesMB}, {"apps", &q.Apps}, {"keys", &q.Keys},
		{"secrets", &q.Secrets}, {"watches", &q.Watches}, {"streams", &q.Streams},
	}
}
