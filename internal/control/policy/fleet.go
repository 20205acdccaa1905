package policy

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/store"
)

// resyncEvery is how often the fleet is listed whole again, a bound on
// how long a change the revisions did not show (a record deleted, not
// written) can go unseen.
const resyncEvery = time.Minute

// fleet is the running, paused and stopped sandboxes this server looks
// after, as the policies see them each tick. Listing every record each
// tick costs a read and a decode of each, a cost that grows with the
// fleet and is paid every second; the fleet instead reads the records
// written since the last tick (store revisions), so a tick costs the
// changes, and lists the whole only every resyncEvery.
type fleet struct {
	svc    *sandbox.Service
	recs   map[string]*store.Sandbox
	rev    int64     // the greatest revision seen
	synced time.Time // when it was last listed whole
}

// live are the states the policies act on.
var live = []api.SandboxState{api.StateRunning, api.StatePaused, api.StateStopped}

// refresh brings the fleet up to date as of now.
func (f *fleet) refresh(ctx context.Context, now time.Time) error {
	if f.recs == nil || now.Sub(f.synced) >= resyncEvery || now.Before(f.synced) {
		return f.resync(ctx, now)
	}
	changed, err := f.svc.OwnedSince(ctx, f.rev)
	if err != nil {
		return err
	}
	for _, rec := range changed {
		f.apply(rec)
	}
	return nil
}

// resync lists the fleet whole.
func (f *fleet) resync(ctx context.Context, now time.Time) error {
	recs, err := f.svc.Owned(ctx, live...)
	if err != nil {
		return err
	}
	f.recs = make(map[string]*store.Sandbox, len(recs))
	for _, rec := range recs {
		f.apply(rec)
	}
	f.synced = now
	return nil
}

// apply takes rec, as written at its revision, into the fleet.
func (f *fleet) apply(rec *store.Sandbox) {
	f.rev = max(f.rev, rec.Rev)
	if slices.Contains(live, rec.State) {
		f.recs[rec.ID] = rec
	} else {
		delete(f.recs, rec.ID)
	}
}

// byState returns the fleet's running, paused and stopped sandboxes,
// each oldest first (by id).
func (f *fleet) byState() (running, paused, stopped []*store.Sandbox) {
	all := make([]*store.Sandbox, 0, len(f.recs))
	for _, rec := range f.recs {
		all = append(all, rec)
	}
	slices.SortFunc(all, func(a, b *store.Sandbox) int { return strings.Compare(a.ID, b.ID) })
	return byState(all)
}
