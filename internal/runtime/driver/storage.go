package driver

import (
	"context"

	"github.com/hutchdev/hutch/internal/base/layerfs"
)

// Storage is what a driver asks of the data directory's storage backend to
// keep sandboxes' writable layers: the server passes its backend
// (internal/runtime/host/storage's Backend, which says each method's
// contract in full). Paths are directories the driver owns under the data
// directory.
type Storage interface {
	// Kind is the backend in use.
	Kind() layerfs.Kind
	// Make makes dir, empty, mode 0700: a btrfs subvolume on btrfs.
	Make(dir string) error
	// Copy makes dst, which must not exist, an exact copy of the tree src
	// (a snapshot, a restore, a fork); a failed Copy leaves nothing at
	// dst.
	Copy(ctx context.Context, src, dst string) (layerfs.CopyStats, error)
	// Remove removes dir and all it holds; a missing dir is no error.
	Remove(dir string) error
	// SetLimit caps the bytes dir (made by Make) may hold; 0 removes the
	// cap. A backend without quotas says errdefs.ErrUnsupported.
	SetLimit(dir string, bytes int64) error
	// Usage is the bytes dir holds.
	Usage(ctx context.Context, dir string) (layerfs.Usage, error)
}
