package api

import "time"

// TenantState is where a tenant is in its life:
//
//	active ──suspend──▶ suspended ──resume──▶ active
//	active, suspended ──delete──▶ deleting ──▶ deleted
//
// A suspended tenant's keys still read (GET routes) but change nothing:
// every other call is 403 tenant_suspended, and its sandboxes were
// stopped and start again only once it is resumed. A deleting tenant's
// keys are revoked and its resources are being destroyed; a deleted
// tenant is a record and nothing else.
type TenantState string

// The tenant states.
const (
	TenantActive    TenantState = "active"
	TenantSuspended TenantState = "suspended"
	TenantDeleting  TenantState = "deleting"
	TenantDeleted   TenantState = "deleted"
)

// Event types recorded in the log of the admin's tenant whose key
// suspended, resumed or deleted a tenant (the tenant's own log is erased
// with it). Each carries "tenant_id" and "name" in Data; tenant.suspended
// also "stopped" (how many sandboxes it stopped), tenant.deleted
// "removed" (TenantRemoved).
const (
	EventTenantSuspended = "tenant.suspended"
	EventTenantResumed   = "tenant.resumed"
	EventTenantDeleted   = "tenant.deleted"
)

// CreateTenantRequest is the body of POST /v1/tenants (admin only).
type CreateTenantRequest struct {
	Name string `json:"name"`
}

// Tenant is a tenant; Key is its first key, returned once on creation.
// Deletion is set once a deletion began, and stays as the record of it.
type Tenant struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	State     TenantState     `json:"state"`
	CreatedAt time.Time       `json:"created_at"`
	Deletion  *TenantDeletion `json:"deletion,omitempty"`
	Key       *Key            `json:"key,omitempty"`
}

// Steps of a tenant's deletion, in order (TenantDeletion.Step).
const (
	DeleteStepKeys      = "keys"      // its keys are revoked, their requests ended
	DeleteStepApps      = "apps"      // its apps are deleted with their sandboxes
	DeleteStepSandboxes = "sandboxes" // its sandboxes are destroyed and their records erased
	DeleteStepSnapshots = "snapshots" // its snapshots are deleted with their files
	DeleteStepTemplates = "templates" // its templates are deleted and unused layers collected
	DeleteStepVolumes   = "volumes"   // its volumes are deleted with their files
	DeleteStepSecrets   = "secrets"   // its secrets are erased
	DeleteStepEvents    = "events"    // its event log is erased
	DeleteStepDone      = "done"      // nothing of it is left but this record
)

// TenantDeletion is the record of a tenant's deletion: who asked and
// when, how far it got and what it removed. It survives the tenant, as
// the tenant's row does, for admins to read.
type TenantDeletion struct {
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// By is the id of the admin key that asked; ByTenant, its tenant, in
	// whose event log tenant.deleted is recorded.
	By       string `json:"by"`
	ByTenant string `json:"by_tenant"`
	// Step is the step under way (DeleteStep*), done at the end.
	Step    string        `json:"step"`
	Removed TenantRemoved `json:"removed"`
	// Error says why the last run of the deletion stopped short; another
	// DELETE, or the server's next start, runs it on from where it was.
	Error string `json:"error,omitempty"`
}

// TenantRemoved counts what a tenant's deletion removed, so far.
type TenantRemoved struct {
	Keys      int `json:"keys"`
	Apps      int `json:"apps"`
	Sandboxes int `json:"sandboxes"` // records erased; each was destroyed first
	Snapshots int `json:"snapshots"`
	Templates int `json:"templates"`
	Volumes   int `json:"volumes"`
	Secrets   int `json:"secrets"`
	Events    int `json:"events"`
}
