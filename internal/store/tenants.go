package store

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
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
	// UpdateTenant reads a tenant, lets fn change its State and Deletion
	// and writes them back, in one write transaction, and returns what it
	// wrote (TransitionTenant is the way to change its state). An error
	// from fn aborts the update and is returned as is; fn must not call
	// the store. Admin or system only.
	UpdateTenant(ctx context.Context, id string, fn func(*Tenant) error) (Tenant, error)
}

// Tenant owns every other resource.
type Tenant struct {
	ID        string
	Name      string // unique
	CreatedAt time.Time
	// Quotas are what an admin set on the tenant; a nil field follows the
	// server's default (the sandbox service applies them at admission).
	Quotas api.Quotas
	// State is where the tenant is in its life; a new tenant is active
	// (CreateTenant sets it). Only an active tenant gets anything new: a
	// sandbox, app, snapshot, template, volume, secret or key created in
	// any other is refused (TenantNotActive) in the write that would add
	// it, and so is an event of a deleted tenant.
	State api.TenantState
	// Deletion is the record of its deletion, once begun.
	Deletion *api.TenantDeletion
}

// TenantNotActive is the answer to a write that would add to a tenant
// that is not active: 403 tenant_suspended, or 403 tenant_deleted for a
// tenant being deleted or deleted.
func TenantNotActive(state api.TenantState) error {
	if state == api.TenantSuspended {
		return tenancy.TenantSuspended()
	}
	return errdefs.Forbidden("tenant_deleted", "this tenant is deleted, or being deleted: nothing can be added to it")
}

// TransitionTenant moves a tenant from one of the states in from to state
// to, in one write transaction, and lets fn change its Deletion on the
// way. A tenant in any other state is left alone and the answer is a 409
// tenant_state_conflict naming the state it was in, returned with the
// tenant as it is: every change of a tenant's state says what it expects,
// so two that race cannot both win.
func TransitionTenant(ctx context.Context, st Tenants, id string, from []api.TenantState, to api.TenantState, fn func(*Tenant)) (Tenant, error) {
	var found Tenant
	t, err := st.UpdateTenant(ctx, id, func(t *Tenant) error {
		if !slices.Contains(from, t.State) {
			found = *t
			names := make([]string, len(from))
			for i, f := range from {
				names[i] = string(f)
			}
			return errdefs.Conflict("tenant_state_conflict", "tenant %s is %s; this needs it %s", id, t.State, strings.Join(names, " or "))
		}
		t.State = to
		if fn != nil {
			fn(t)
		}
		return nil
	})
	if errdefs.HasCode(err, "tenant_state_conflict") {
		return found, err
	}
	return t, err
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
