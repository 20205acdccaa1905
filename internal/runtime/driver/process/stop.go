package process

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

// Stop ends every process of the sandbox and keeps its files.
func (d *Driver) Stop(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	return d.killAll(ctx, st)
}

// Destroy ends every process and removes the sandbox's directory.
func (d *Driver) Destroy(ctx context.Context, h driver.Handle) error {
	st, err := decodeState(h)
	if err != nil {
		return err
	}
	return d.teardown(ctx, st)
}

func (d *Driver) teardown(ctx context.Context, st state) error {
	d.dropEgress(st.Dir)
	if err := d.killAll(ctx, st); err != nil {
		return err
	}
	if err := d.trash.Remove(st.Dir); err != nil {
		return fmt.Errorf("remove sandbox directory: %w", err)
	}
	if d.uids != nil && st.UID != 0 {
		d.uids.Release(st.UID)
	}
	return nil
}

// killAll asks the agent to end its process tree (SIGTERM), then kills
// whatever is left: every process of the sandbox's uid, or, when sandboxes
// share hutch's uid, every process of the agent's session.
func (d *Driver) killAll(ctx context.Context, st state) error {
	ctx, cancel := hostproc.TeardownContext(ctx)
	defer cancel()
	if hostproc.Alive(st.Pid, st.StartTime) {
		_ = syscall.Kill(st.Pid, syscall.SIGTERM)
		hostproc.WaitGone(ctx, st.Pid, st.StartTime, 2*time.Second)
		if hostproc.Alive(st.Pid, st.StartTime) {
			_ = syscall.Kill(st.Pid, syscall.SIGKILL)
		}
	}
	return hostproc.KillAll(ctx, members(st))
}

// members selects the processes of the sandbox: those of the agent's
// session, and, when the sandbox has a uid of its own, every process
// holding it.
func members(st state) func(hostproc.Proc) bool {
	inSession := func(p hostproc.Proc) bool { return st.Pid != 0 && p.Sid == st.Pid }
	if st.UID == 0 {
		return inSession
	}
	return func(p hostproc.Proc) bool {
		return inSession(p) || p.HasUID(func(u uint32) bool { return u == st.UID })
	}
}
