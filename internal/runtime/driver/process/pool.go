package process

import (
	"context"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/runtime/driver/warm"
)

// newPool keeps agents started ahead of need: each has its directory and
// uid and waits for its envelope; Create moves one into place.
func newPool(d *Driver, size int) *warm.Pool[*spawned] {
	return warm.New(filepath.Join(d.dir, ".warm"), 0o711, size, d.newAgent, func(sp *spawned) {
		sp.close()
		_ = d.teardown(context.Background(), sp.st)
	}, d.log)
}

// sweepWarm removes what the pools of earlier runs left behind. Their
// agents saw their stdin close and exited; anything left is killed.
func (d *Driver) sweepWarm() {
	warm.SweepOthers(filepath.Join(d.dir, ".warm"), d.pool.Dir(), func(dir string) {
		st, err := readState(dir)
		if err != nil {
			st = state{Dir: dir}
		}
		st.Dir = dir
		_ = d.teardown(context.Background(), st)
	})
}
