package launch

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"
)

// ExecFD is the agent binary's descriptor in a started agent
// (exec.Cmd.ExtraFiles numbers them from 3). The envelope names it
// (envelope.Envelope.ExecFD), so the agent closes it first thing.
const ExecFD = 3

// AgentCommand is a command, with an empty environment, that executes the
// agent binary at path through a descriptor hutch opens
// (/proc/self/fd/ExecFD): the ids the agent starts with need not look up
// the directories above the binary. name is its argv[0], as the agent's
// /proc/<pid>/cmdline shows it. Call done once the command has started.
func AgentCommand(path, name string) (_ *exec.Cmd, done func(), _ error) {
	bin, err := os.OpenFile(path, os.O_RDONLY|unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open the agent binary: %w", err)
	}
	return &exec.Cmd{
		Path:       "/proc/self/fd/" + strconv.Itoa(ExecFD),
		Args:       []string{name},
		Env:        []string{},
		ExtraFiles: []*os.File{bin},
	}, func() { bin.Close() }, nil
}
