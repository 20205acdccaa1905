package namespace

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

// Stop ends every process of the sandbox and keeps its files and cgroups.
func (d *Driver) Stop(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	return d.killAll(ctx, st)
}

// Destroy ends every process and removes the sandbox's cgroups, directory
// and uid range.
func (d *Driver) Destroy(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	return d.teardown(ctx, st)
}

// teardown removes everything of a sandbox, whatever state it is in.
func (d *Driver) teardown(ctx context.Context, st state) error {
	ctx, cancel := hostproc.TeardownContext(ctx)
	defer cancel()
	// Whatever runs as one of its uids outside its cgroups goes with the
	// range's walk (reaper.go), before the range can go to another.
	if err := d.killProcs(ctx, st); err != nil {
		return err
	}
	if d.cg != nil && st.Cgroup != "" {
		g, err := d.cg.Open(st.Cgroup)
		if err == nil {
			err = g.Remove(ctx)
		}
		if err != nil {
			return fmt.Errorf("remove the sandbox's cgroups: %w", err)
		}
	}
	// The writable layer first: on btrfs a subvolume, whose qgroup goes
	// with it.
	if err := d.removeLayer(filepath.Join(st.Dir, upperDir)); err != nil {
		return fmt.Errorf("remove the sandbox's files: %w", err)
	}
	if err := d.trash.Remove(st.Dir); err != nil {
		return fmt.Errorf("remove sandbox directory: %w", err)
	}
	d.retireIDs(st.IDBase)
	return nil
}

// killAll ends every process of a sandbox that keeps its uid range
// (stopped, restored, or a start that failed): killProcs, then whatever
// runs as one of its host uids, wherever it runs (a setuid file of the
// sandbox's that got out, say), so none outlives the stop.
func (d *Driver) killAll(ctx context.Context, st state) error {
	ctx, cancel := hostproc.TeardownContext(ctx)
	defer cancel()
	if err := d.killProcs(ctx, st); err != nil {
		return err
	}
	if d.rootless || st.IDBase == 0 {
		return nil
	}
	inRange := func(u uint32) bool { return u >= st.IDBase && u-st.IDBase < idSize }
	if err := hostproc.KillAll(ctx, func(p hostproc.Proc) bool { return p.HasUID(inRange) }); err != nil {
		return fmt.Errorf("kill the processes of the sandbox's uids: %w", err)
	}
	return nil
}

// killProcs kills the agent, which as init of the sandbox's pid namespace
// takes every process of the sandbox with it (the kernel kills them all
// before the agent's exit completes), then kills whatever is still in the
// sandbox's cgroups, or, without cgroups, in its pid namespace, until
// nothing is left.
func (d *Driver) killProcs(ctx context.Context, st state) error {
	ctx, cancel := hostproc.TeardownContext(ctx)
	defer cancel()
	if d.alive(st) {
		_ = syscall.Kill(st.Pid, syscall.SIGKILL)
		d.thaw(st) // a paused sandbox's agent dies once thawed
		hostproc.WaitGone(ctx, st.Pid, st.StartTime, 2*time.Second)
	}
	if d.cg != nil && st.Cgroup != "" {
		g, err := d.cg.Open(st.Cgroup)
		if err == nil {
			err = g.Kill(ctx)
		}
		if err != nil {
			return fmt.Errorf("kill the sandbox's processes: %w", err)
		}
		return nil
	}
	// Without cgroups: whatever is still in the sandbox's pid namespace
	// (a process of a dying namespace can outlast its init for a moment).
	if d.cg != nil || st.PidNS == 0 {
		return nil
	}
	return hostproc.KillAll(ctx, func(p hostproc.Proc) bool { return hostproc.PidNS(p.Pid) == st.PidNS })
}

// alive reports whether the sandbox's agent runs.
func (d *Driver) alive(st state) bool { return hostproc.Alive(st.Pid, st.StartTime) }
