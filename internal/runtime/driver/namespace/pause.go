package namespace

import (
	"context"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/cgroups"
)

var _ driver.Pauser = (*Driver)(nil)

// Pause freezes every process of the sandbox, its agent included, with
// the cgroup freezer: they keep their memory, files and sockets, and run
// on from where they were at Resume. A process stops only once it is
// scheduled, so the pause waits for the kernel to report them all
// stopped, up to FreezeTimeout; one that has not by then (starved of CPU
// past it, or in an uninterruptible sleep on a slow disk) fails the
// pause, and the sandbox is thawed again.
func (d *Driver) Pause(ctx context.Context, h driver.Handle) error {
	g, err := d.freezer(h)
	if err != nil {
		return err
	}
	thaw, frozen, err := d.freeze(ctx, g)
	if err != nil {
		return fmt.Errorf("freeze the sandbox's processes: %w", err)
	}
	if !frozen {
		if err := ctx.Err(); err != nil {
			return errors.Join(fmt.Errorf("freeze the sandbox's processes: %w", err), thaw())
		}
		return errors.Join(errdefs.New(errdefs.ErrConflict, "pause_failed",
			"the sandbox's processes did not all stop within %s: a process stops only once it gets CPU, which a busy host or a small CPU limit holds back, "+
				"and one waiting on a disk stops only when the disk answers; the sandbox runs on, try again", d.cfg.FreezeTimeout), thaw())
	}
	return nil
}

// Resume thaws the sandbox's processes.
func (d *Driver) Resume(ctx context.Context, h driver.Handle) error {
	g, err := d.freezer(h)
	if err != nil {
		return err
	}
	if err := g.Thaw(); err != nil {
		return fmt.Errorf("thaw the sandbox's processes: %w", err)
	}
	return nil
}

// freeze freezes g and waits for its processes to stop, up to
// FreezeTimeout (cgroups.Group.Freeze).
func (d *Driver) freeze(ctx context.Context, g *cgroups.Group) (thaw func() error, frozen bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.FreezeTimeout)
	defer cancel()
	return g.Freeze(ctx)
}

// freezer is the cgroup that pauses the sandbox of h.
func (d *Driver) freezer(h driver.Handle) (*cgroups.Group, error) {
	st, err := decodeState(h)
	if err != nil {
		return nil, err
	}
	if !d.caps.Pause || st.Cgroup == "" {
		return nil, errdefs.New(errdefs.ErrUnsupported, "unsupported", "the namespace driver cannot pause sandboxes on this host: it has no cgroup freezer")
	}
	return d.cg.Open(st.Cgroup)
}

// thaw lets a paused sandbox's processes run, so signals sent to them
// land; the sandbox's cgroups see to the rest.
func (d *Driver) thaw(st state) {
	if d.cg == nil || st.Cgroup == "" {
		return
	}
	if g, err := d.cg.Open(st.Cgroup); err == nil {
		_ = g.Thaw()
	}
}
