package process

import (
	"context"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

// Recover re-attaches after a control-plane restart. The agent runs in its
// own session and survives the restart, so there is nothing to rebuild:
// the control plane reconnects to its socket.
func (d *Driver) Recover(ctx context.Context, h driver.Handle) (driver.Status, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Status{}, err
	}
	if d.uids != nil && st.UID != 0 {
		d.uids.Claim(st.UID, st.Dir)
	}
	return d.Status(ctx, h)
}

// Status reports whether the sandbox's agent is alive.
func (d *Driver) Status(ctx context.Context, h driver.Handle) (driver.Status, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Status{}, err
	}
	if hostproc.Alive(st.Pid, st.StartTime) {
		waited, _ := hostproc.Waited(st.Pid) // 0 if it exited since
		return driver.Status{State: driver.Running, Waited: waited}, nil
	}
	if _, err := readState(st.Dir); err != nil {
		return driver.Status{State: driver.Gone, Detail: "sandbox directory is gone"}, nil
	}
	return driver.Status{State: driver.Stopped, Detail: "agent is not running"}, nil
}
