package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Remove deletes the sandbox's groups in every hierarchy, children first.
// Kill the group before: rmdir fails while a task lives in it. A task that
// is still exiting keeps its group busy for a moment, so EBUSY is retried
// until ctx ends. Groups that do not exist are not an error.
//
// A memory group's charges are given up first (empty): a removed group
// whose pages are still charged to it (page cache of files other
// sandboxes go on reading, the template's and the agent's binary above
// all) stays in the kernel as a dying group for as long as those pages
// stay cached, each one a cost in every later reclaim and statistic; a
// host that has made and destroyed thousands of sandboxes otherwise
// carries thousands of them.
func (g *Group) Remove(ctx context.Context) error {
	var errs []error
	for _, dir := range g.dirs() {
		err := walkGroups(dir, func(d string) error {
			empty(d)
			return rmdir(ctx, d)
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// empty gives up what memory group dir has charged, as far as the kernel
// can: cgroup v1's memory.force_empty, v2's memory.reclaim of all it
// uses. Any other group, or a failure (what cannot be reclaimed stays
// charged), is left as it is: the group is removed either way.
func empty(dir string) {
	if err := os.WriteFile(filepath.Join(dir, "memory.force_empty"), []byte("0"), 0); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return
	}
	cur, err := os.ReadFile(filepath.Join(dir, "memory.current"))
	if err != nil || strings.TrimSpace(string(cur)) == "0" {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, "memory.reclaim"), []byte(strings.TrimSpace(string(cur))), 0)
}

// List returns the ids of the sandboxes that have a group under the parent
// in any hierarchy, sorted. Names that are not sandbox ids are skipped.
func (m *Manager) List() ([]string, error) {
	var ids []string
	for _, h := range m.hiers {
		entries, err := os.ReadDir(filepath.Join(h.mount, m.parent))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cgroups: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && isID(e.Name()) {
				ids = append(ids, e.Name())
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
