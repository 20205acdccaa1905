package namespace

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/launch"
)

// state is the driver's part of a Handle; a copy is kept in the sandbox's
// directory so the sweeper can clean up what the store does not know.
type state struct {
	Dir       string     `json:"dir"`
	IDBase    uint32     `json:"id_base"` // host uid (and gid) of the sandbox's root
	Pid       int        `json:"pid"`     // the agent, as the host numbers it
	StartTime uint64     `json:"start_time"`
	PidNS     uint64     `json:"pid_ns,omitempty"` // inode of the sandbox's pid namespace
	Template  string     `json:"template,omitempty"`
	Cgroup    string     `json:"cgroup,omitempty"` // the sandbox id its cgroups are named by
	Limits    api.Limits `json:"limits"`           // what its cgroups enforce, to make them again on Start
	Root      bool       `json:"root,omitempty"`   // its commands run as root inside
	// Mapped says the writable layer keeps the sandbox's own ids on disk
	// and is id-mapped in (layout.go).
	Mapped bool `json:"mapped,omitempty"`
	// Image is the image the sandbox's root is made of; nil for the host
	// template.
	Image *imageState `json:"image,omitempty"`
	// Volumes are the volumes it mounts (volumes.go).
	Volumes []volumeState `json:"volumes,omitempty"`
}

func readState(dir string) (state, error) {
	var st state
	err := launch.ReadState(dir, &st)
	return st, err
}

func decodeState(h driver.Handle) (state, error) {
	var st state
	if h.Driver != Name || h.Version != driver.HandleVersion {
		return st, fmt.Errorf("handle is for driver %q version %d, not %s version %d", h.Driver, h.Version, Name, driver.HandleVersion)
	}
	if err := json.Unmarshal(h.State, &st); err != nil {
		return st, fmt.Errorf("decode namespace handle: %w", err)
	}
	if st.Dir == "" || st.IDBase == 0 {
		return st, errors.New("namespace handle has no directory or id range")
	}
	return st, nil
}
