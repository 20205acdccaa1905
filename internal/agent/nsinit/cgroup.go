package nsinit

import (
	"fmt"
	"os"
	"strconv"
)

// CgroupJoin tells the agent how to put its commands in the sandbox's
// cgroup, the box; the host's cgroup manager (internal/runtime/host/cgroups)
// fills it in. It travels in the agent's bootstrap envelope as JSON. The
// paths are the host's: the agent must see the host's cgroup mounts at the
// same place to write them.
//
// On v1 the agent locks the OS thread that forks commands and moves that
// thread alone into the box (JoinThread with BoxTasks): children forked from
// it are born there, while the agent's other threads stay in <id>. On v2 a
// process lives in one group with all its threads, so the agent first moves
// itself out of box into agent (MoveProcess with AgentProcs), then moves
// each command it starts into box (MoveProcess with BoxProcs).
type CgroupJoin struct {
	Version    int      `json:"version"`
	BoxTasks   []string `json:"box_tasks,omitempty"`   // v1: box/tasks of every hierarchy
	BoxProcs   string   `json:"box_procs,omitempty"`   // v2: box/cgroup.procs
	AgentProcs string   `json:"agent_procs,omitempty"` // v2: agent/cgroup.procs
}

// JoinThread moves thread tid (a tid from gettid, not a pid) into the group
// of each v1 tasks file in paths. It stops at the first failure, leaving the
// thread in the groups it already joined.
func JoinThread(paths []string, tid int) error {
	for _, p := range paths {
		if err := writeCgroupFile(p, strconv.Itoa(tid)); err != nil {
			return err
		}
	}
	return nil
}

// MoveProcess moves process pid, with all its threads, into the group of the
// cgroup.procs file at path. As an unprivileged user this needs write access
// to the cgroup.procs of the common ancestor of both groups, which the host
// grants the agent for <id>.
func MoveProcess(path string, pid int) error {
	return writeCgroupFile(path, strconv.Itoa(pid))
}

// writeCgroupFile writes value to an existing cgroup file in one write, as
// the kernel wants; it never creates or truncates.
func writeCgroupFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("nsinit: write %q: %w", value, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("nsinit: write %q: %w", value, err)
	}
	return nil
}
