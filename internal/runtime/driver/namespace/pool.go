package namespace

import (
	"context"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/runtime/driver/warm"
)

// newPool keeps sandboxes started ahead of need: each has its directory,
// uid range and namespaces, and an agent waiting for its envelope; Create
// moves one into place and makes its cgroups.
func newPool(d *Driver, size int) *warm.Pool[*spawned] {
	return warm.New(filepath.Join(d.dir, ".warm"), 0o700, size, d.newSandbox, func(sp *spawned) {
		sp.close()
		_ = d.teardown(context.Background(), sp.st)
	}, d.log)
}
