package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Remove deletes the sandbox's groups in every hierarchy, children first.
// Kill the group before: rmdir fails while a task lives in it. A task that
// is still exiting keeps its group busy for a moment, so EBUSY is retried
// until ctx ends. Groups that do not exist are not an error.
func (g *Group) Remove(ctx context.Context) error {
	var errs []error
	for _, dir := range g.dirs() {
		err := walkGroups(dir, func(d string) error { return rmdir(ctx, d) })
		errs = append(errs, err)
	}
	return errors.Join(errs...)
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
