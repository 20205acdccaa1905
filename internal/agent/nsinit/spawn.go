package nsinit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// The first stage of an agent's start under the namespace driver. Go
// starts a child with a vfork, which copies nothing of the parent, unless
// the child enters a new user namespace: then it forks, copying the page
// tables of the whole parent, and every page the parent writes afterwards
// faults to be copied. A control plane holding thousands of sandboxes
// would pay that, growing with it, for every create. So the control
// plane vforks the agent binary as `<name> -spawn <spec>` in its own
// namespaces (a process of a few MiB), which starts the agent in the
// sandbox's namespaces, prints its pid and exits.
//
// The stage starts the agent as its sibling (CLONE_PARENT): the agent is
// the control plane's child, as if the control plane had started it, and
// the control plane reaps it (launch.StartStaged), even as PID 1 of a
// container without an init; orphaned instead, every agent would be left
// to the host's init, which is the operator's, not ours to load.

// SpawnArg is the argument that makes the agent binary the first stage.
const SpawnArg = "-spawn"

// Procs is an agent's GOMAXPROCS as init of its sandbox (see the agent's
// main for why one slot is enough).
const Procs = 1

// Env is the environment the namespace driver starts the agent's first
// stage with, and the stage the agent. GOMAXPROCS set there is read as the
// runtime starts: the stage starts no more scheduler slots than the agent
// needs, and the agent does not stop its world to drop them, which was 4 %
// of an agent's start, nor run the runtime's periodic check of its CPU
// limit. Commands never see it: their environment is the envelope's and
// the request's.
func Env() []string { return []string{"GOMAXPROCS=" + strconv.Itoa(Procs)} }

// SpawnSpec is what the first stage starts the agent with: the control
// plane's exec.Cmd SysProcAttr, as the stage cannot take it directly.
type SpawnSpec struct {
	Cloneflags uintptr                `json:"clone"`
	UIDs       []syscall.SysProcIDMap `json:"uids"`
	GIDs       []syscall.SysProcIDMap `json:"gids"`
	// Setgroups is GidMappingsEnableSetgroups; NoSetGroups is the
	// credential's (rootless, where setgroups is denied).
	Setgroups   bool `json:"setgroups,omitempty"`
	NoSetGroups bool `json:"no_setgroups,omitempty"`
	// Files is how many descriptors, from 3 on, pass on to the agent at
	// the same numbers (the binary's first).
	Files int `json:"files"`
}

// SysProcAttr is how the agent is started in the sandbox's namespaces,
// by the first stage, or by the control plane itself for an agent
// without it.
func (sp SpawnSpec) SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:                 sp.Cloneflags,
		UidMappings:                sp.UIDs,
		GidMappings:                sp.GIDs,
		GidMappingsEnableSetgroups: sp.Setgroups,
		// The namespace's root before exec, so the agent keeps its
		// capabilities inside it.
		Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}, NoSetGroups: sp.NoSetGroups},
		Setsid:     true,
	}
}

// Spawned is the first stage's one line on stdout.
type Spawned struct {
	Pid   int    `json:"pid,omitempty"`
	Error string `json:"error,omitempty"`
}

// Spawn is the first stage: it starts the agent binary (descriptor 3) as
// name with spec, in the working directory, stdin, stdout and stderr it
// was given, reports the agent's pid on stdout and returns the stage's
// exit code.
func Spawn(name, spec string, stdout io.Writer) int {
	pid, err := spawn(name, spec)
	line, _ := json.Marshal(Spawned{Pid: pid, Error: errString(err)})
	if _, werr := stdout.Write(append(line, '\n')); werr != nil || err != nil {
		return 1
	}
	return 0
}

func spawn(name, raw string) (int, error) {
	var sp SpawnSpec
	if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		return 0, fmt.Errorf("spawn spec: %w", err)
	}
	if sp.Files < 1 {
		return 0, fmt.Errorf("spawn spec: %d descriptors; the agent binary's is one", sp.Files)
	}
	files := make([]*os.File, sp.Files)
	for i := range files {
		files[i] = os.NewFile(uintptr(3+i), "fd"+strconv.Itoa(3+i))
	}
	attr := sp.SysProcAttr()
	attr.Cloneflags |= syscall.CLONE_PARENT
	cmd := &exec.Cmd{
		Path:        "/proc/self/fd/3",
		Args:        []string{name},
		Env:         os.Environ(), // the driver's: Env
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  files,
		SysProcAttr: attr,
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start the agent: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release() // the control plane's child: it reaps the agent
	return pid, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
