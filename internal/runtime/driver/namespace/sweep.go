package namespace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/runtime/driver/warm"
	"github.com/hutchdev/hutch/internal/runtime/host/cgroups"
)

// Sweep removes every sandbox the store does not know, with its
// processes, cgroups and uid range; then what earlier warm pools left,
// cgroups without a directory, stale registry entries and templates no
// sandbox uses.
func (d *Driver) Sweep(ctx context.Context, known func(id string) bool) ([]string, error) {
	warm.SweepOthers(filepath.Join(d.dir, ".warm"), d.pool.Dir(), func(dir string) {
		_ = d.teardown(ctx, d.stateOr(dir))
	})
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	onDisk := map[string]bool{}
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || !ids.Valid(id) {
			continue
		}
		onDisk[id] = true
		if known(id) {
			continue
		}
		if err := d.teardown(ctx, d.stateOr(d.sandboxDir(id))); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, id)
	}
	errs = append(errs, d.sweepCgroups(ctx, known, onDisk))
	d.trash.Sweep()
	if !d.rootless {
		for _, first := range d.ids.Stale(d.dir) {
			d.reaper.retire(first)
		}
		d.reaper.flush()
	}
	d.sweepTemplates()
	return removed, errors.Join(errs...)
}

// stateOr reads dir's state, or makes do with the directory alone.
func (d *Driver) stateOr(dir string) state {
	st, err := readState(dir)
	if err != nil {
		st = state{}
	}
	st.Dir = dir
	return st
}

// sweepCgroups removes the cgroups of sandboxes that have neither a
// record nor a directory (a crash between the two removals). Another hutch
// server on the host may share the cgroup parent: a group is swept only
// when the uid range its files belong to is registered to this driver's
// directory, or to nobody (its sandbox was torn down but for the group).
func (d *Driver) sweepCgroups(ctx context.Context, known func(string) bool, onDisk map[string]bool) error {
	if d.cg == nil {
		return nil
	}
	names, err := d.cg.List()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range names {
		if known(id) || onDisk[id] {
			continue
		}
		g, err := d.cg.Open(id)
		if err != nil || !d.ownsGroup(g) {
			continue
		}
		if err := g.Kill(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, g.Remove(ctx))
	}
	return errors.Join(errs...)
}

// sweepTemplates removes template directories that are neither current
// nor the lower layer of a sandbox still on disk.
func (d *Driver) sweepTemplates() {
	used := map[string]bool{d.tmpl.Dir: true, d.base.Dir: true}
	entries, _ := os.ReadDir(d.dir)
	for _, e := range entries {
		if st, err := readState(d.sandboxDir(e.Name())); err == nil {
			used[st.Template] = true
		}
	}
	base := filepath.Join(d.dir, ".templates")
	tmpls, _ := os.ReadDir(base)
	for _, t := range tmpls {
		if p := filepath.Join(base, t.Name()); !used[p] {
			_ = os.RemoveAll(p)
		}
	}
}

// ownsGroup reports whether g is this driver's to sweep (see sweepCgroups).
func (d *Driver) ownsGroup(g *cgroups.Group) bool {
	uid, err := g.OwnerUID()
	if err != nil || uid < idBase {
		return false
	}
	base := uint32(idBase + (uid-idBase)/idSize*idSize)
	owner, held := d.ids.Owner(base)
	return !held || strings.HasPrefix(owner, d.dir+"/")
}
