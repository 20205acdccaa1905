package agent

import (
	"os"
	"syscall"

	"github.com/hutchdev/hutch/internal/agent/envelope"
)

// credential is what commands run as: nil (the agent's own user) unless
// the envelope names another one, and then with no supplementary groups.
func credential(r *envelope.RunAs) *syscall.Credential {
	if r == nil || (r.UID == uint32(os.Getuid()) && r.GID == uint32(os.Getgid())) {
		return nil
	}
	return &syscall.Credential{Uid: r.UID, Gid: r.GID, Groups: []uint32{}}
}

// appCredential is who the app's processes run as: where commands run as
// an unprivileged user, that user with envelope.AppGID for its group (or
// the one below, should the user's own group be AppGID), so that its
// config stays out of the commands' reach; otherwise nil, as the
// commands, since root inside may take any ids.
func appCredential(r *envelope.RunAs) *syscall.Credential {
	if credential(r) == nil || r.UID == 0 {
		return nil
	}
	gid := uint32(envelope.AppGID)
	if r.GID == gid {
		gid--
	}
	return &syscall.Credential{Uid: r.UID, Gid: gid, Groups: []uint32{}}
}
