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
	return d.status(st), nil
}

// Status reports whether the sandbox's agent is alive and, if it is, how
// long its threads have waited for a CPU.
func (d *Driver) Status(ctx context.Context, h driver.Handle) (driver.Status, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Status{}, err
	}
	s := d.status(st)
	if s.State == driver.Running {
		s.Waited, _ = hostproc.Waited(st.Pid) // 0 if it exited since
	}
	return s, nil
}

// status is whether the agent of st is alive, without Waited: recovery,
// which asks it of every sandbox at a start, has no use for it.
func (d *Driver) status(st state) driver.Status {
	if hostproc.Alive(st.Pid, st.StartTime) {
		return driver.Status{State: driver.Running}
	}
	if _, err := readState(st.Dir); err != nil {
		return driver.Status{State: driver.Gone, Detail: "sandbox directory is gone"}
	}
	return driver.Status{State: driver.Stopped, Detail: "agent is not running"}
}
