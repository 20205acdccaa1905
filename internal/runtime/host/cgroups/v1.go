package cgroups

import (
	"path/filepath"
	"strconv"
)

// createV1 makes <parent>/<id> and <parent>/<id>/box in every hierarchy.
// mkdir records each group it makes, for Create's rollback.
func (g *Group) createV1(mkdir func(string) error) error {
	for _, h := range g.m.hiers {
		if err := mkdirShared(filepath.Join(h.mount, g.m.parent)); err != nil {
			return err
		}
		if err := mkdir(g.path(h)); err != nil {
			return err
		}
		if err := mkdir(g.path(h, "box")); err != nil {
			return err
		}
	}
	return nil
}

// setLimitsV1 sets box to l and <id> to l plus the agent's overhead; <id>
// gets no cpu limit (a v1 child may not have more quota than its parent).
func (g *Group) setLimitsV1(l Limits) error {
	outer := l.withOverhead()
	if h, ok := g.m.find(Memory); ok {
		if err := setMemoryV1(g.path(h, "box"), l.MemoryBytes); err != nil {
			return err
		}
		if err := setMemoryV1(g.path(h), outer.MemoryBytes); err != nil {
			return err
		}
	}
	if h, ok := g.m.find(Pids); ok {
		if err := setPids(g.path(h, "box"), l.Pids); err != nil {
			return err
		}
		if err := setPids(g.path(h), outer.Pids); err != nil {
			return err
		}
	}
	if h, ok := g.m.find(CPU); ok {
		dir := g.path(h, "box")
		if err := writeFile(filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod)); err != nil {
			return err
		}
		quota := "-1"
		if l.CPU > 0 {
			quota = strconv.FormatInt(cpuQuota(l.CPU), 10)
		}
		if err := writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), quota); err != nil {
			return err
		}
	}
	return nil
}

// setMemoryV1 limits memory, and memory plus swap when the kernel accounts
// swap (memory.memsw.*), both to limit (0: none). The kernel refuses a memsw
// limit below the memory limit, so a raise writes memsw first and a cut
// writes memory first. A fresh group is unlimited, so its first limit is a
// cut.
func setMemoryV1(dir string, limit int64) error {
	mem := filepath.Join(dir, "memory.limit_in_bytes")
	memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes")
	value := "-1"
	if limit > 0 {
		value = strconv.FormatInt(limit, 10)
	}
	if !exists(memsw) {
		return writeFile(mem, value)
	}
	current, err := readInt(mem)
	if err != nil {
		return err
	}
	order := []string{mem, memsw}
	if limit == 0 || limit > current {
		order = []string{memsw, mem}
	}
	for _, f := range order {
		if err := writeFile(f, value); err != nil {
			return err
		}
	}
	return nil
}
