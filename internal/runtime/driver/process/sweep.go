package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// Sweep removes every sandbox directory, and its processes, that known does
// not claim: what a crash or a lost destroy left behind.
func (d *Driver) Sweep(ctx context.Context, known func(id string) bool) ([]string, error) {
	d.sweepWarm()
	d.trash.Sweep()
	defer d.sweepUIDs()
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || !ids.Valid(id) || known(id) {
			continue
		}
		dir := filepath.Join(d.dir, id)
		st, err := readState(dir)
		if err != nil {
			st = state{Dir: dir}
		}
		st.Dir = dir
		if err := d.teardown(ctx, st); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, id)
	}
	return removed, errors.Join(errs...)
}
