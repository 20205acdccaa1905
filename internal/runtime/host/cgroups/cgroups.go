// Package cgroups owns the control groups of hutch's sandboxes. One API
// covers cgroup v1, cgroup v2 and hybrid hosts (v1 controllers beside an
// empty cgroup2 mount).
//
// Every sandbox gets a group named by its id under a parent (default
// "hutch") at the root of each hierarchy, as Docker does:
//
//	v1, in each of the memory, pids, cpu, cpuacct and freezer hierarchies:
//	  <mnt>/<parent>/<id>/       the agent
//	  <mnt>/<parent>/<id>/box/   the sandbox's commands
//	v2:
//	  <root>/<parent>/<id>/        no processes; enables the controllers
//	  <root>/<parent>/<id>/agent/  the agent
//	  <root>/<parent>/<id>/box/    the sandbox's commands
//
// box gets the user's limits exactly; <id> gets them plus the agent's
// overhead (AgentMemoryOverhead, AgentPidsOverhead), so the agent can still
// work when the box is full.
//
// Manager and Group make, limit, measure (Stats), kill and remove groups,
// and tell the agent how to put its commands in the box (Group.Join); the
// agent's side of that, which runs as the sandbox's root user in a user
// namespace, is internal/agent/nsinit's.
package cgroups

import (
	"errors"
	"slices"
)

// DefaultParent is the parent group hutch's groups live under.
const DefaultParent = "hutch"

// What the agent gets on top of the user's limits, in <id>.
const (
	AgentMemoryOverhead int64 = 128 << 20
	AgentPidsOverhead   int64 = 128
)

// The controllers hutch limits with, as Available and Missing name them.
const (
	Memory = "memory"
	Pids   = "pids"
	CPU    = "cpu"
)

// freezer is the v1 controller Kill uses to stop a group before signalling
// it. v2 has cgroup.kill and cgroup.freeze built in.
const freezer = "freezer"

// cpuacct is the v1 controller that counts a group's CPU time (Stats); v2
// counts it in every group's cpu.stat, with or without the cpu controller.
// A host without it still runs sandboxes; their CPU time is unknown.
const cpuacct = "cpuacct"

// limited lists the controllers hutch sets limits with, in a fixed order.
var limited = []string{Memory, Pids, CPU}

// Error classes; test with errors.Is.
var (
	// ErrInvalid: a bad sandbox id, parent name or limit.
	ErrInvalid = errors.New("cgroups: invalid argument")
	// ErrExists: Create found the sandbox's group already there.
	ErrExists = errors.New("cgroups: group already exists")
	// ErrNoCgroups: the host has no cgroup file system hutch can use.
	ErrNoCgroups = errors.New("cgroups: no usable cgroup file system")
)

// Limits caps a sandbox. A zero field means no limit.
type Limits struct {
	MemoryBytes int64   // memory including swap, in bytes
	Pids        int64   // processes and threads
	CPU         float64 // cores, e.g. 0.5; at least 0.01
}

// Owner holds the host uid and gid of the sandbox's root user, which the
// agent runs as. Create gives it the files the agent writes. -1 leaves the
// uid or gid unchanged, as os.Chown does.
type Owner struct {
	UID, GID int
}

// Manager makes the groups of one parent on one host. Build it with New; it
// holds no open files and is safe for concurrent use.
type Manager struct {
	version int
	parent  string
	// hiers are the hierarchies hutch uses: on v1 one per mount of memory,
	// pids, cpu, cpuacct or freezer (co-mounted controllers share one); on
	// v2 one.
	hiers []hierarchy
}

// hierarchy is one cgroup mount and the controllers of interest it holds.
type hierarchy struct {
	mount       string
	controllers []string
}

func (h hierarchy) has(controller string) bool {
	return slices.Contains(h.controllers, controller)
}

// accountingOnly says h holds cpuacct alone: a hierarchy hutch only reads,
// where a group an older hutch made is missing (see Place).
func (h hierarchy) accountingOnly() bool {
	return len(h.controllers) == 1 && h.controllers[0] == cpuacct
}

// Version tells which cgroup version holds the controllers hutch uses: 1 or 2.
func (m *Manager) Version() int { return m.version }

// Parent is the name of the group hutch's groups live under.
func (m *Manager) Parent() string { return m.parent }

// Available lists the controllers of "memory", "pids" and "cpu" this host
// gives; limits of the others are skipped.
func (m *Manager) Available() []string {
	var out []string
	for _, c := range limited {
		if _, ok := m.find(c); ok {
			out = append(out, c)
		}
	}
	return out
}

// Missing lists the controllers of "memory", "pids" and "cpu" this host does
// not give, for a degraded report.
func (m *Manager) Missing() []string {
	var out []string
	for _, c := range limited {
		if _, ok := m.find(c); !ok {
			out = append(out, c)
		}
	}
	return out
}

// find returns the hierarchy that holds controller.
func (m *Manager) find(controller string) (hierarchy, bool) {
	for _, h := range m.hiers {
		if h.has(controller) {
			return h, true
		}
	}
	return hierarchy{}, false
}
