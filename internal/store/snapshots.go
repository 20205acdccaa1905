package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Snapshots keeps the tenants' snapshots, by id.
type Snapshots interface {
	// CreateSnapshot stores s in the caller's tenant (the system may set
	// s.TenantID itself), setting an ID if empty and CreatedAt if zero.
	CreateSnapshot(ctx context.Context, s *Snapshot) error
	// GetSnapshot returns one of the caller's tenant's snapshots.
	GetSnapshot(ctx context.Context, id string) (*Snapshot, error)
	// ListSnapshots returns the caller's tenant's snapshots matching q,
	// newest first (every tenant's for the system without a principal).
	ListSnapshots(ctx context.Context, q SnapshotQuery) ([]Snapshot, error)
	// DeleteSnapshot deletes one of the caller's tenant's snapshots.
	DeleteSnapshot(ctx context.Context, id string) error
}

// Snapshot is a captured copy of a sandbox's files, owned by its tenant;
// it outlives its sandbox. Its files are on disk under the data
// directory, by ID; the record says what they are a copy of (the
// sandbox's template and driver), so a sandbox started from it has the
// same root under them.
type Snapshot struct {
	ID        string
	TenantID  string
	SandboxID string // the sandbox it was taken of (which may be gone)
	Name      string // the caller's, may be empty; not unique
	Template  string
	Driver    string
	Bytes     int64
	Files     int64
	// PauseMS is how long the sandbox's processes were frozen for it.
	PauseMS   int64
	CreatedAt time.Time
}

// MaxSnapshotName bounds a snapshot's name.
const MaxSnapshotName = 128

// CheckSnapshot validates s and sets CreatedAt to now if zero.
func CheckSnapshot(s *Snapshot) error {
	if s.ID == "" || s.TenantID == "" || s.SandboxID == "" || s.Template == "" || s.Driver == "" {
		return errdefs.Invalid("invalid_snapshot", "a snapshot needs an id, a tenant, its sandbox, template and driver")
	}
	if len(s.Name) > MaxSnapshotName {
		return errdefs.Invalid("invalid_snapshot_name", "a snapshot's name must be at most %d bytes", MaxSnapshotName)
	}
	s.CreatedAt = orNow(s.CreatedAt)
	return nil
}

// SnapshotNotFound is the answer for a snapshot that is missing or not
// the caller's.
func SnapshotNotFound(id string) error {
	return errdefs.NotFound("snapshot_not_found", "snapshot %s not found", id)
}

// SnapshotQuery filters ListSnapshots.
type SnapshotQuery struct {
	SandboxID string // only this sandbox's, if set
}
