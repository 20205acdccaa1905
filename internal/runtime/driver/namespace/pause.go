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
// on from where they were at Resume. A task the kernel cannot stop
// within a short wait (an uninterruptible sleep on a slow disk, say)
// fails the pause, and the sandbox is thawed again.
func (d *Driver) Pause(ctx context.Context, h driver.Handle) error {
	g, err := d.freezer(h)
	if err != nil {
		return err
	}
	thaw, frozen, err := g.Freeze(ctx)
	if err != nil {
		return fmt.Errorf("freeze the sandbox's processes: %w", err)
	}
	if !frozen {
		return errors.Join(errdefs.New(errdefs.ErrConflict, "pause_failed",
			"a process of the sandbox would not stop (it may be waiting on a disk); try again"), thaw())
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
