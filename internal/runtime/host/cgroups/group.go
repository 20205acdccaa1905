package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/nsinit"
)

// Group is the cgroup of one sandbox in every hierarchy hutch uses. It is a
// name, not a handle: it holds nothing open and outlives a restart of hutch.
type Group struct {
	m  *Manager
	id string
}

// Open returns the Group of an existing sandbox, for example after hutch
// restarts. It checks the id but not whether the group exists.
func (m *Manager) Open(id string) (*Group, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return &Group{m: m, id: id}, nil
}

// Create makes the sandbox's group in every hierarchy, sets l, and gives
// owner the files the agent writes (those Join names). It fails with
// ErrExists when the group is already there. On any failure it removes what
// it made; the shared parent group is left in place.
func (m *Manager) Create(id string, l Limits, owner Owner) (_ *Group, retErr error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	g := &Group{m: m, id: id}
	var made []string
	defer func() {
		if retErr == nil {
			return
		}
		// Nothing was placed in the new groups yet, so they go at once.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, dir := range slices.Backward(made) {
			retErr = errors.Join(retErr, rmdir(ctx, dir))
		}
	}()
	mkdir := func(dir string) error {
		if err := mkdirNew(dir); err != nil {
			return err
		}
		made = append(made, dir)
		return nil
	}
	var err error
	if m.version == 2 {
		err = g.createV2(mkdir)
	} else {
		err = g.createV1(mkdir)
	}
	if err != nil {
		return nil, err
	}
	if err := g.SetLimits(l); err != nil {
		return nil, err
	}
	for _, f := range g.ownedFiles() {
		if err := os.Chown(f, owner.UID, owner.GID); err != nil {
			return nil, fmt.Errorf("cgroups: %w", err)
		}
	}
	return g, nil
}

// ID is the sandbox id the group is named by.
func (g *Group) ID() string { return g.id }

// Place puts process pid (the agent, from the host side) in the group: on v1
// in <id> of every hierarchy, on v2 in box, from which the agent moves itself
// to agent (see Join). A group an older hutch made has no group in a
// hierarchy of cpuacct alone; Place leaves that one out, and the sandbox's
// CPU time stays unknown.
func (g *Group) Place(pid int) error {
	if g.m.version == 2 {
		return writeFile(g.path(g.m.hiers[0], "box", "cgroup.procs"), strconv.Itoa(pid))
	}
	for _, h := range g.m.hiers {
		procs := g.path(h, "cgroup.procs")
		if h.accountingOnly() && !exists(procs) {
			continue
		}
		if err := writeFile(procs, strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// Join returns what the agent needs to put its commands in the box.
func (g *Group) Join() nsinit.CgroupJoin {
	if g.m.version == 2 {
		h := g.m.hiers[0]
		return nsinit.CgroupJoin{
			Version:    2,
			BoxProcs:   g.path(h, "box", "cgroup.procs"),
			AgentProcs: g.path(h, "agent", "cgroup.procs"),
		}
	}
	j := nsinit.CgroupJoin{Version: 1}
	for _, h := range g.m.hiers {
		j.BoxTasks = append(j.BoxTasks, g.path(h, "box", "tasks"))
	}
	return j
}

// ownedFiles lists the files Create chowns to the agent's user: on v1 box's
// tasks and cgroup.procs in every hierarchy; on v2 the cgroup.procs of <id>
// (a move from agent to box is checked against their common ancestor),
// agent and box.
func (g *Group) ownedFiles() []string {
	if g.m.version == 2 {
		h := g.m.hiers[0]
		return []string{
			g.path(h, "cgroup.procs"),
			g.path(h, "agent", "cgroup.procs"),
			g.path(h, "box", "cgroup.procs"),
		}
	}
	var out []string
	for _, h := range g.m.hiers {
		out = append(out, g.path(h, "box", "tasks"), g.path(h, "box", "cgroup.procs"))
	}
	return out
}

// path joins <mnt>/<parent>/<id> of hierarchy h with elem.
func (g *Group) path(h hierarchy, elem ...string) string {
	return filepath.Join(append([]string{h.mount, g.m.parent, g.id}, elem...)...)
}

// dirs lists <mnt>/<parent>/<id> of every hierarchy.
func (g *Group) dirs() []string {
	out := make([]string, 0, len(g.m.hiers))
	for _, h := range g.m.hiers {
		out = append(out, g.path(h))
	}
	return out
}

// OwnerUID is the host uid Create gave the group's files to: the
// sandbox's root user. It tells which uid range, and so which hutch
// server, the group belongs to.
func (g *Group) OwnerUID() (int, error) {
	for _, f := range g.ownedFiles() {
		var st unix.Stat_t
		if err := unix.Stat(f, &st); err == nil {
			return int(st.Uid), nil
		}
	}
	return 0, fmt.Errorf("cgroups: %s has none of the files its owner holds", g.id)
}
