package fake

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

var _ driver.Meter = (*Driver)(nil)

// OpStats is Stats, for Hook and Calls.
const OpStats Op = "stats"

// statsFile holds, in a sandbox's directory, what its Stats report.
const statsFile = "stats.json"

// SetStats sets what Stats reports of sandbox id from now on; the fake
// measures nothing itself.
func (d *Driver) SetStats(id string, st driver.Stats) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d.cfg.Dir, id, statsFile), raw, 0o600)
}

// unmeasured is what Stats says of a sandbox before SetStats: the fake
// measures nothing itself, so every figure is unsupported.
var unmeasured = []string{"cpu", "memory", "pids", "network"}

// Stats reports what SetStats last set for a sandbox whose agent runs
// (every figure unsupported before), and 409 sandbox_not_running for
// another.
func (d *Driver) Stats(ctx context.Context, h driver.Handle) (driver.Stats, error) {
	var st driver.Stats
	s, id, err := d.decode(h)
	if err != nil {
		return st, err
	}
	if err := d.enter(ctx, OpStats, id); err != nil {
		return st, err
	}
	d.mu.Lock()
	_, running := d.agents[id]
	d.mu.Unlock()
	if !running {
		return st, errdefs.Conflict("sandbox_not_running", "the sandbox's agent is not running")
	}
	raw, err := os.ReadFile(filepath.Join(s.Dir, statsFile))
	if errors.Is(err, fs.ErrNotExist) {
		st.Unsupported = slices.Clone(unmeasured)
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(raw, &st)
}
