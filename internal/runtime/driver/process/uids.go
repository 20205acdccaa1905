package process

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
	"github.com/hutchdev/hutch/internal/runtime/host/hostids"
)

// Sandbox uids are taken from a range far above any real account, one
// per sandbox, registered host-wide.
const (
	uidBase  = 2_100_000_000
	uidCount = 1 << 20
)

func newUIDPool() (*hostids.Pool, error) {
	return hostids.New(hostids.Registry, uidBase, 1, uidCount)
}

// loadUIDs claims the uids of sandboxes already on disk.
func (d *Driver) loadUIDs() error {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("process driver: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(d.dir, e.Name())
		st, err := readState(dir)
		if err == nil && st.UID != 0 {
			d.uids.Claim(st.UID, dir)
		}
	}
	return nil
}

// state is the driver's part of a Handle; a copy is kept in the sandbox's
// directory so the sweeper can clean up what the store does not know.
type state struct {
	Dir       string `json:"dir"`
	UID       uint32 `json:"uid,omitempty"`
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"start_time"` // /proc/<pid>/stat field 22, guards against pid reuse
	// EgressPort is the sandbox's egress proxy on the host's loopback
	// (egress.go).
	EgressPort uint16 `json:"egress_port,omitempty"`
}

func readState(dir string) (state, error) {
	var st state
	err := launch.ReadState(dir, &st)
	return st, err
}

// sweepUIDs frees registry entries of this driver whose sandbox directory
// is gone (a crash between teardown and release).
func (d *Driver) sweepUIDs() {
	if d.uids != nil {
		d.uids.Sweep(d.dir)
	}
}
