package fake

import (
	"context"

	"github.com/hutchdev/hutch/internal/runtime/driver"
)

var _ driver.Pauser = (*Driver)(nil)

// Pause marks the sandbox paused. The fake's agent runs on: it is the
// service's part, not the driver's, to send no calls to a paused sandbox.
func (d *Driver) Pause(ctx context.Context, h driver.Handle) error {
	return d.setPaused(ctx, OpPause, h, true)
}

// Resume marks the sandbox running again.
func (d *Driver) Resume(ctx context.Context, h driver.Handle) error {
	return d.setPaused(ctx, OpResume, h, false)
}

func (d *Driver) setPaused(ctx context.Context, op Op, h driver.Handle, paused bool) error {
	_, id, err := d.decode(h)
	if err != nil {
		return err
	}
	if err := d.enter(ctx, op, id); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if paused {
		d.paused[id] = true
	} else {
		delete(d.paused, id)
	}
	return nil
}

// Paused says whether the sandbox is paused.
func (d *Driver) Paused(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.paused[id]
}
