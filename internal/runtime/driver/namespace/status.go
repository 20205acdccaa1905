package namespace

import (
	"context"
	"os"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

// Recover re-attaches after a control-plane restart. The agent runs in its
// own session and namespaces and survives the restart; the control plane
// reconnects to its socket.
func (d *Driver) Recover(ctx context.Context, h driver.Handle) (driver.Status, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Status{}, err
	}
	d.claimIDs(st.IDBase, st.Dir)
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
	if d.alive(st) {
		return driver.Status{State: driver.Running}
	}
	if _, err := readState(st.Dir); err != nil {
		return driver.Status{State: driver.Gone, Detail: "sandbox directory is gone"}
	}
	return driver.Status{State: driver.Stopped, Detail: "agent is not running"}
}

// OOMKills is how many processes of the sandbox the out-of-memory killer
// has killed since its cgroups were made.
func (d *Driver) OOMKills(ctx context.Context, h driver.Handle) (uint64, error) {
	st, err := decodeState(h)
	if err != nil || d.cg == nil || st.Cgroup == "" {
		return 0, err
	}
	g, err := d.cg.Open(st.Cgroup)
	if err != nil {
		return 0, err
	}
	return g.OOMKills()
}

// loadIDs claims the uid ranges of sandboxes already on disk.
func (d *Driver) loadIDs() error {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		st, err := readState(d.sandboxDir(e.Name()))
		if err == nil {
			d.claimIDs(st.IDBase, st.Dir)
		}
	}
	return nil
}
