package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
)

// Sandboxes keeps the sandboxes' records: their state, what they were
// made with, and the driver's handle.
type Sandboxes interface {
	// CreateSandbox stores sb in the caller's tenant, setting sb.TenantID
	// (the system must set it itself), an ID if empty, and CreatedAt and
	// UpdatedAt if zero.
	CreateSandbox(ctx context.Context, sb *Sandbox) error
	// GetSandbox returns one of the caller's tenant's sandboxes.
	GetSandbox(ctx context.Context, id string) (*Sandbox, error)
	// ListSandboxes returns a page of the caller's tenant's sandboxes,
	// newest first, and the cursor of the next page ("" after the last).
	ListSandboxes(ctx context.Context, opts ListOptions) ([]*Sandbox, string, error)
	// UpdateSandbox reads a sandbox, lets fn change it and writes it back,
	// all in one write transaction, and returns what it wrote. An error from
	// fn aborts the update and is returned as is. fn must not call the
	// store. ID, TenantID and CreatedAt cannot be changed; UpdatedAt is set
	// to now.
	UpdateSandbox(ctx context.Context, id string, fn func(*Sandbox) error) (*Sandbox, error)
	// AllSandboxes returns every tenant's sandboxes in the given states (all
	// states if none), oldest first. System only: recovery and reaping.
	AllSandboxes(ctx context.Context, states ...api.SandboxState) ([]*Sandbox, error)
	// SandboxesSince returns every tenant's sandboxes written after
	// revision rev (Sandbox.Rev), in the given states (all states if
	// none), in the order they were written: what changed since a reader
	// last looked, whose cost is the changes, not the fleet. System only.
	SandboxesSince(ctx context.Context, rev int64, states ...api.SandboxState) ([]*Sandbox, error)
	// CountSandboxes counts every tenant's sandboxes by state and driver
	// (destroyed ones included), ordered by state and driver; a pair with
	// none is left out. System only: the metrics.
	CountSandboxes(ctx context.Context) ([]SandboxCount, error)
	// DeleteSandbox removes a sandbox's row. Destroying a sandbox only sets
	// its state; this is for garbage collection and tests.
	DeleteSandbox(ctx context.Context, id string) error
	// DeleteSandboxesByTenant erases the records of tenantID's
	// sandboxes, their labels, ports and events with them, and returns
	// how many. Every one must be destroyed first: a sandbox in any other
	// state refuses the whole (409 sandbox_not_destroyed). System only: a
	// tenant's deletion.
	DeleteSandboxesByTenant(ctx context.Context, tenantID string) (int, error)
}

// Sandbox is a sandbox's persisted record. Empty maps and an empty Handle
// come back nil.
type Sandbox struct {
	ID       string
	TenantID string
	State    api.SandboxState
	Template string
	Driver   string
	Env      map[string]string
	Cwd      string
	Limits   api.Limits
	TimeoutS int
	Labels   map[string]string
	Root     bool // commands run as root inside the sandbox
	Network  api.NetworkPolicy
	// Volumes are the volumes it mounts, by name.
	Volumes []api.VolumeMount
	// OnExpiry is what its expiry does: api.OnExpiryDestroy (also when
	// empty) or api.OnExpiryStop.
	OnExpiry string
	Handle   []byte // the driver's handle, opaque here
	Error    string // why it failed
	// Node is the control plane that owns the sandbox: the one that
	// recovers, reaps and sweeps it ("" before nodes were recorded).
	Node string

	CreatedAt time.Time
	UpdatedAt time.Time
	ExpiresAt *time.Time
	// PausedAt is when it was paused, while it is paused.
	PausedAt *time.Time
	// IdleTimeoutS is its own idle window in seconds (0: the server's);
	// KeepaliveUntil keeps it from idle actions until then.
	IdleTimeoutS   int
	KeepaliveUntil *time.Time
	// DiskBytes is what its files took when last measured (an estimate
	// at create: the bytes of the snapshot it starts from). CreateSandbox
	// stores it; only SetSandboxDisk changes it later.
	DiskBytes int64
	// Rev is the record's revision: every write gives it one greater
	// than any record's before (SandboxesSince). The store sets it.
	Rev int64
}

// SandboxCount is how many sandboxes are in one state on one driver
// (CountSandboxes).
type SandboxCount struct {
	State  api.SandboxState
	Driver string
	N      int
}

// ListOptions filter and page ListSandboxes.
type ListOptions struct {
	State  api.SandboxState  // only this state, if set
	Labels map[string]string // only sandboxes carrying every one of these
	Limit  int               // page size: DefaultLimit if <= 0, at most MaxLimit
	Cursor string            // from the previous page
}
