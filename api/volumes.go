package api

import "time"

// MaxVolumeName bounds a volume's name; names follow the rules of secret
// names and are unique within a tenant.
const MaxVolumeName = 128

// MaxVolumes bounds the volumes one sandbox mounts.
const MaxVolumes = 16

// Event types about a tenant's volumes; each carries "name" in Data.
const (
	EventVolumeCreated = "volume.created"
	EventVolumeDeleted = "volume.deleted"
)

// Volume is a tenant's named directory that sandboxes mount and that
// outlives them.
type Volume struct {
	Name string `json:"name"`
	// SizeMB caps what it holds; SizeEnforced says whether the data
	// directory's filesystem enforces it (btrfs qgroups) or it is only
	// recorded.
	SizeMB       int       `json:"size_mb"`
	SizeEnforced bool      `json:"size_enforced"`
	CreatedAt    time.Time `json:"created_at"`
	// Node is the node whose disk holds its files, in a fleet: a
	// sandbox mounting it is made there.
	Node string `json:"node,omitempty"`
}

// CreateVolumeRequest is the body of POST /v1/volumes.
type CreateVolumeRequest struct {
	Name   string `json:"name"`
	SizeMB int    `json:"size_mb"`
	// SizeBestEffort accepts a size the filesystem cannot enforce;
	// without it such a volume is refused (400 quota_unsupported).
	SizeBestEffort bool `json:"size_best_effort,omitempty"`
}

// VolumeList is the body of GET /v1/volumes.
type VolumeList struct {
	Volumes []Volume `json:"volumes"`
}

// VolumeMount mounts one of the caller's volumes into a sandbox at Path,
// read-write unless ReadOnly.
type VolumeMount struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only,omitempty"`
}
