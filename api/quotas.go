package api

// Quotas are what an admin sets on a tenant (PUT /v1/tenants/{id}/quotas):
// bounds on what the tenant's live sandboxes hold together. A field left
// out (or null) follows the server's default for it (hutch serve
// --tenant-*); 0 is no limit.
//
// Sandboxes counts every sandbox that is neither destroyed nor failed, a
// stopped one included (it keeps its files and its place). MemoryMB, CPU
// and Pids add up the limits of the sandboxes that hold them: all but the
// stopped ones; starting a stopped sandbox is admitted as a create is.
// DiskMB is recorded but not yet enforced: that needs per-sandbox disk
// quotas, which come with the storage work.
type Quotas struct {
	Sandboxes *int     `json:"sandboxes,omitempty"`
	MemoryMB  *int     `json:"memory_mb,omitempty"`
	CPU       *float64 `json:"cpu,omitempty"`
	Pids      *int     `json:"pids,omitempty"`
	DiskMB    *int     `json:"disk_mb,omitempty"`
}

// QuotaLimits are the quotas in force on a tenant: each one set on it, else
// the server's default. 0 is no limit.
type QuotaLimits struct {
	Sandboxes int     `json:"sandboxes"`
	MemoryMB  int     `json:"memory_mb"`
	CPU       float64 `json:"cpu"`
	Pids      int     `json:"pids"`
	DiskMB    int     `json:"disk_mb"`
}

// QuotaUsage is what a tenant's sandboxes hold now, counted as Quotas
// says. Disk is not measured yet.
type QuotaUsage struct {
	Sandboxes int     `json:"sandboxes"`
	MemoryMB  int     `json:"memory_mb"`
	CPU       float64 `json:"cpu"`
	Pids      int     `json:"pids"`
}

// TenantQuotas is the answer of GET and PUT /v1/tenants/{id}/quotas: what
// is set on the tenant, what is in force, and its usage against it.
// DiskEnforced says whether DiskMB is enforced (not yet).
type TenantQuotas struct {
	TenantID     string      `json:"tenant_id"`
	Set          Quotas      `json:"set"`
	Limits       QuotaLimits `json:"limits"`
	Usage        QuotaUsage  `json:"usage"`
	DiskEnforced bool        `json:"disk_enforced"`
}
