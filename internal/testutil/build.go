// Package testutil is what tests share: it builds hutch's real binaries
// for the tests that run them (the driver conformance suite, the API tests
// and the end-to-end tests), lays out data directories, makes real
// filesystems on loop images and tmpfs mounts (loopfs.go), and starts a
// throwaway Postgres server (postgres.go).
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Module is the import path of hutch's module.
const Module = "github.com/hutchdev/hutch"

// Build compiles each command (an import path below Module, such as
// "cmd/hutch-agent") statically, without cgo, into a new directory that
// sandbox uids can read and execute. The caller removes the directory.
func Build(cmds ...string) (dir string, err error) {
	dir, err = os.MkdirTemp("", "hutch-bin-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	if err := build(dir, false, cmds...); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// BuildRace compiles each command with the race detector (and so cgo)
// into dir, replacing what Build put there: for end-to-end runs that look
// for data races in the control plane. The agent must stay static: it is
// never built this way.
func BuildRace(dir string, cmds ...string) error {
	return build(dir, true, cmds...)
}

func build(dir string, race bool, cmds ...string) error {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if race {
		args = append(args, "-race")
	}
	for _, c := range cmds {
		args = append(args, Module+"/"+c)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if race {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return nil
}
