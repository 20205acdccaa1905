package agent_test

import (
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/envelope"
)

// TestAppCredential: the app's processes get a group of their own exactly
// where commands run as an unprivileged user; where they run as root,
// which could take any ids, or as the agent itself (the process driver,
// rootless), the app runs as they do.
func TestAppCredential(t *testing.T) {
	for _, tc := range []struct {
		name  string
		runAs *envelope.RunAs
		want  *syscall.Credential
	}{
		{"the agent's own ids", nil, nil},
		{"root inside", &envelope.RunAs{UID: 0, GID: 0}, nil},
		{"the sandbox's user", &envelope.RunAs{UID: 1000, GID: 1000},
			&syscall.Credential{Uid: 1000, Gid: envelope.AppGID, Groups: []uint32{}}},
		{"an image's user whose group is AppGID", &envelope.RunAs{UID: 101, GID: envelope.AppGID},
			&syscall.Credential{Uid: 101, Gid: envelope.AppGID - 1, Groups: []uint32{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &envelope.Envelope{RunAs: tc.runAs}
			if diff := cmp.Diff(tc.want, agent.ConfigFromEnvelope(e, nil).AppCredential); diff != "" {
				t.Errorf("AppCredential (-want +got):\n%s", diff)
			}
		})
	}
}
