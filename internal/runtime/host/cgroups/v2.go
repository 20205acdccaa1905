package cgroups

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// createV2 makes <parent>/<id>, <parent>/<id>/agent and <parent>/<id>/box,
// enabling the available controllers for the children of the root, the
// parent and <id>. mkdir records each group it makes, for Create's rollback.
func (g *Group) createV2(mkdir func(string) error) error {
	h := g.m.hiers[0]
	parent := filepath.Join(h.mount, g.m.parent)
	if err := enableControllers(h.mount, h.controllers); err != nil {
		return err
	}
	if err := mkdirShared(parent); err != nil {
		return err
	}
	if err := enableControllers(parent, h.controllers); err != nil {
		return err
	}
	if err := mkdir(g.path(h)); err != nil {
		return err
	}
	if err := enableControllers(g.path(h), h.controllers); err != nil {
		return err
	}
	if err := mkdir(g.path(h, "agent")); err != nil {
		return err
	}
	return mkdir(g.path(h, "box"))
}

// enableControllers turns on ctrls in dir's cgroup.subtree_control, writing
// only when one is still off.
func enableControllers(dir string, ctrls []string) error {
	file := filepath.Join(dir, "cgroup.subtree_control")
	s, err := readFile(file)
	if err != nil {
		return err
	}
	on := strings.Fields(s)
	var add []string
	for _, c := range ctrls {
		if !slices.Contains(on, c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return writeFile(file, strings.Join(add, " "))
}

// setLimitsV2 sets box to l and <id> to l plus the agent's overhead, skipping
// the controllers the host lacks; <id> gets no cpu limit.
func (g *Group) setLimitsV2(l Limits) error {
	h := g.m.hiers[0]
	box, outer := g.path(h, "box"), g.path(h)
	if h.has(Memory) {
		if err := setMemoryV2(box, l.MemoryBytes); err != nil {
			return err
		}
		if err := setMemoryV2(outer, l.withOverhead().MemoryBytes); err != nil {
			return err
		}
	}
	if h.has(Pids) {
		if err := setPids(box, l.Pids); err != nil {
			return err
		}
		if err := setPids(outer, l.withOverhead().Pids); err != nil {
			return err
		}
	}
	if h.has(CPU) {
		quota := "max"
		if l.CPU > 0 {
			quota = strconv.FormatInt(cpuQuota(l.CPU), 10)
		}
		if err := writeFile(filepath.Join(box, "cpu.max"), fmt.Sprintf("%s %d", quota, cpuPeriod)); err != nil {
			return err
		}
	}
	return nil
}

// setMemoryV2 limits memory to limit and forbids swap (so limit covers
// memory and swap, as on v1), or lifts both when limit is 0. Swap goes first
// so that reclaim under a lower memory.max cannot push pages to swap.
// memory.swap.max is absent without swap accounting.
func setMemoryV2(dir string, limit int64) error {
	mem, swap := "max", "max"
	if limit > 0 {
		mem, swap = strconv.FormatInt(limit, 10), "0"
	}
	if f := filepath.Join(dir, "memory.swap.max"); exists(f) {
		if err := writeFile(f, swap); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, "memory.max"), mem)
}
