package process

import (
	"context"
	"fmt"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

var _ driver.Meter = (*Driver)(nil)

// Stats adds up from /proc what a running sandbox's commands use: every
// process of the agent's session or of the sandbox's own uid, as killAll
// finds them, but the agent, of which only the time of the commands it
// reaped counts. A command that leaves the session of a sandbox without a
// uid of its own leaves the count. Memory is the processes' resident sets;
// the limits are per process (rlimits), so none is reported. The sandbox
// shares the host's network, whose counters are not its own: "network" is
// unsupported.
func (d *Driver) Stats(ctx context.Context, h driver.Handle) (driver.Stats, error) {
	st, err := decodeState(h)
	if err != nil {
		return driver.Stats{}, err
	}
	gone := errdefs.Conflict("sandbox_not_running", "the sandbox's agent is not running")
	if !hostproc.Alive(st.Pid, st.StartTime) {
		return driver.Stats{}, gone
	}
	u, err := hostproc.Measure(members(st), st.Pid)
	if err != nil {
		return driver.Stats{}, fmt.Errorf("read the sandbox's processes: %w", err)
	}
	// Alive still, the agent was the session read: its pid was not
	// reused meanwhile.
	if !hostproc.Alive(st.Pid, st.StartTime) {
		return driver.Stats{}, gone
	}
	return driver.Stats{CPUUsageNS: u.CPUNS, MemoryBytes: u.RSSBytes, Pids: u.Tasks, Unsupported: []string{"network"}}, nil
}
