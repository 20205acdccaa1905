package cgroups

import "strconv"

// Join tells the agent how to put its commands in the box. It travels in
// the agent's bootstrap envelope as JSON. The paths are the host's: the
// agent must see the host's cgroup mounts at the same place to write them.
//
// On v1 the agent locks the OS thread that forks commands and moves that
// thread alone into the box (JoinThread with BoxTasks): children forked from
// it are born there, while the agent's other threads stay in <id>. On v2 a
// process lives in one group with all its threads, so the agent first moves
// itself out of box into agent (MoveProcess with AgentProcs), then moves
// each command it starts into box (MoveProcess with BoxProcs).
type Join struct {
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
		if err := writeFile(p, strconv.Itoa(tid)); err != nil {
			return err
		}
	}
	return nil
}

// MoveProcess moves process pid, with all its threads, into the group of the
// cgroup.procs file at path. As an unprivileged user this needs write access
// to the cgroup.procs of the common ancestor of both groups, which Create
// grants the agent for <id>.
func MoveProcess(path string, pid int) error {
	return writeFile(path, strconv.Itoa(pid))
}
