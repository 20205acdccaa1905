package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Volumes keeps the tenants' volumes. They are addressed by name within
// the principal's tenant.
type Volumes interface {
	// CreateVolume stores v in the caller's tenant, setting an ID if
	// empty and CreatedAt if zero; a name in use is "volume_exists".
	CreateVolume(ctx context.Context, v *Volume) error
	// GetVolume returns one of the caller's tenant's volumes by name.
	GetVolume(ctx context.Context, name string) (*Volume, error)
	// ListVolumes returns the caller's tenant's volumes by name.
	ListVolumes(ctx context.Context) ([]Volume, error)
	// DeleteVolume deletes one of the caller's tenant's volumes, unless a
	// sandbox of the tenant not yet destroyed mounts it ("volume_in_use"),
	// checked in the same transaction; it returns what it deleted.
	DeleteVolume(ctx context.Context, name string) (*Volume, error)
	// DeleteVolumesByTenant deletes every volume record of tenantID left
	// and returns how many. System only: a tenant's deletion, once its
	// sandboxes are destroyed (their files are the volume service's).
	DeleteVolumesByTenant(ctx context.Context, tenantID string) (int, error)
}

// Volume is a tenant's named directory that sandboxes mount; its files are
// on disk under the data directory, by ID.
type Volume struct {
	ID           string
	TenantID     string
	Name         string // unique in its tenant; see CheckVolumeName
	SizeMB       int
	SizeEnforced bool
	CreatedAt    time.Time
	// Node is the node whose disk holds its files ("" for one made
	// before nodes were recorded: the one node's).
	Node string
}

// CheckVolumeName validates a volume's name: as a secret's.
func CheckVolumeName(name string) error {
	if !validName(name, api.MaxVolumeName) {
		return errdefs.Invalid("invalid_volume_name",
			"a volume's name must be 1-%d characters of A-Z, a-z, 0-9, '_', '.' and '-', not starting with '.' or '-'",
			api.MaxVolumeName)
	}
	return nil
}

// CheckVolume validates v and sets CreatedAt to now if zero.
func CheckVolume(v *Volume) error {
	if v.ID == "" || v.TenantID == "" {
		return errdefs.Invalid("invalid_volume", "a volume needs an id and a tenant")
	}
	if err := CheckVolumeName(v.Name); err != nil {
		return err
	}
	if v.SizeMB <= 0 {
		return errdefs.Invalid("invalid_volume", "a volume needs a size_mb above 0")
	}
	v.CreatedAt = orNow(v.CreatedAt)
	return nil
}

// VolumeNotFound is the answer for a volume that is missing or not the
// caller's.
func VolumeNotFound(name string) error {
	return errdefs.NotFound("volume_not_found", "volume %q not found", name)
}

// VolumeExists is the answer for a name already used in the tenant.
func VolumeExists(name string) error {
	return errdefs.Conflict("volume_exists", "a volume named %q already exists", name)
}

// VolumeInUse is the answer to deleting a volume that sandboxes mount.
func VolumeInUse(name string, n int) error {
	return errdefs.Conflict("volume_in_use", "volume %q is mounted by %d sandbox(es) that are not destroyed; destroy them first", name, n)
}
