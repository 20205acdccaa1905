package namespace

import (
	"os"
	"syscall"
)

// The host ids a sandbox's ids map to. As root, each sandbox gets a range
// of idSize host uids and gids of its own (inside id n is IDBase + n),
// registered host-wide. Rootless, a user namespace may map only the one
// uid and gid hutch runs as: every sandbox's root is hutch's user, and no
// other id exists inside.

// takeIDs reserves the host ids of the sandbox in dir and returns the
// first.
func (d *Driver) takeIDs(dir string) (uint32, error) {
	if d.rootless {
		return uint32(os.Getuid()), nil
	}
	return d.ids.Take(dir)
}

// claimIDs records that the sandbox in dir holds the range at base.
func (d *Driver) claimIDs(base uint32, dir string) {
	if !d.rootless && base != 0 {
		d.ids.Claim(base, dir)
	}
}

// retireIDs hands the range at base to the reaper, which frees it once
// no process runs as one of its ids (reaper.go).
func (d *Driver) retireIDs(base uint32) {
	if !d.rootless && base != 0 {
		d.reaper.retire(base)
	}
}

// hostUID and hostGID are the host's numbers for id inside the sandbox.
func (d *Driver) hostUID(st state, id uint32) int {
	if d.rootless {
		return os.Getuid()
	}
	return int(st.IDBase + id)
}

func (d *Driver) hostGID(st state, id uint32) int {
	if d.rootless {
		return os.Getgid()
	}
	return int(st.IDBase + id)
}

// diskUID and diskGID are the ids a file of the sandbox's writable layer
// has on disk for id inside: its own when the layer is id-mapped in
// (state.Mapped), else the host's.
func (d *Driver) diskUID(st state, id uint32) int {
	if st.Mapped {
		return int(id)
	}
	return d.hostUID(st, id)
}

func (d *Driver) diskGID(st state, id uint32) int {
	if st.Mapped {
		return int(id)
	}
	return d.hostGID(st, id)
}

// idMaps are the agent's user namespace's uid and gid maps.
func (d *Driver) idMaps(st state) (uids, gids []syscall.SysProcIDMap) {
	if d.rootless {
		return []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			[]syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(st.IDBase), Size: idSize}}
	return m, m
}
