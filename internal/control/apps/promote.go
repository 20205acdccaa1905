package apps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// Promote makes what dev runs live, blue/green:
//
//  1. dev is checked (processes running, "/" answers 200, the WebSocket
//     handshake the manifest declares);
//  2. dev is forked into a candidate, which the supervisor runs as live
//     (its own base path and environment) until the same checks pass;
//  3. the live sandbox is snapshotted;
//  4. the live pointer swaps to the candidate in one conditional write,
//     and the router's cache with it: the next request and the next
//     WebSocket reach the candidate, while the ones already open finish
//     where they were.
//
// Dev is left as it is (its open WebSockets, its dev server). The old live
// sandbox stays, running, as previous_live for rollback; the one before it
// is destroyed. A failed check leaves live untouched and says which check.
func (s *Service) Promote(ctx context.Context, id string) (api.PromoteResult, error) {
	unlock := s.locks.Lock(id)
	defer unlock()
	a, err := s.ready(ctx, id)
	if err != nil {
		return api.PromoteResult{}, err
	}
	if t := s.runningTask(ctx, a.ID); t != "" {
		return api.PromoteResult{}, errdefs.Conflict("task_running", "task %s is changing dev; promote once it has ended", t)
	}
	checks, ok := s.health(ctx, a, a.Dev, api.RoleDev)
	if !ok {
		return api.PromoteResult{}, checkFailed("dev", checks)
	}
	fork, err := s.sbx.Fork(ctx, a.Dev, api.ForkRequest{Count: 1, Labels: map[string]string{LabelRole: api.RoleLive}})
	if err != nil {
		return api.PromoteResult{}, fmt.Errorf("fork dev: %w", err)
	}
	cand := fork.Sandboxes[0].ID
	keep := false
	defer func() {
		if !keep {
			tctx, cancel := s.teardown(ctx)
			defer cancel()
			s.destroy(tctx, cand)
		}
	}()
	if _, err := s.supervise(ctx, a, cand, api.RoleLive); err != nil {
		return api.PromoteResult{}, err
	}
	liveChecks, ok := s.waitHealthy(ctx, a, cand, api.RoleLive, s.cfg.ReadyTimeout)
	checks = append(checks, prefixed("live.", liveChecks)...)
	if !ok {
		return api.PromoteResult{}, checkFailed("the promoted copy", liveChecks)
	}
	res := api.PromoteResult{Checks: checks}
	if a.Live != "" {
		snap, err := s.sbx.Snapshot(ctx, a.Live, api.CreateSnapshotRequest{})
		if err != nil {
			return api.PromoteResult{}, fmt.Errorf("snapshot live: %w", err)
		}
		res.Snapshot = snap.ID
		s.emit(a, api.EventSnapshotCreated, "live sandbox snapshotted before promotion", map[string]any{"snapshot": snap.ID, "sandbox": a.Live})
	}
	gen, oldPrev, oldLive := a.Generation, a.PreviousLive, a.Live
	start := time.Now()
	a, err = s.update(ctx, id, func(a *store.App) error {
		if a.Generation != gen {
			return errdefs.Conflict("app_changed", "app %s changed while it was promoted; promote again", a.Name)
		}
		a.PreviousLive, a.Live = a.Live, cand
		return nil
	})
	swap := time.Since(start)
	if err != nil {
		return api.PromoteResult{}, err
	}
	keep = true
	tctx, cancel := s.teardown(ctx)
	defer cancel()
	s.destroy(tctx, oldPrev)
	s.emit(a, api.EventAppPromoted, fmt.Sprintf("dev promoted: live is now %s", cand), map[string]any{
		"live": cand, "previous_live": oldLive, "dev": a.Dev, "snapshot": res.Snapshot, "swap_us": swap.Microseconds()})
	res.App = s.toAPI(a)
	return res, nil
}

// Rollback points live back at what it pointed at before the last
// promotion, and keeps the one it leaves as previous_live, so a rollback
// can be rolled back.
func (s *Service) Rollback(ctx context.Context, id string) (api.App, error) {
	unlock := s.locks.Lock(id)
	defer unlock()
	a, err := s.ready(ctx, id)
	if err != nil {
		return api.App{}, err
	}
	if a.PreviousLive == "" {
		return api.App{}, errdefs.Conflict("nothing_to_roll_back", "app %s has not been promoted: there is no previous live sandbox", a.Name)
	}
	gen := a.Generation
	a, err = s.update(ctx, id, func(a *store.App) error {
		if a.Generation != gen {
			return errdefs.Conflict("app_changed", "app %s changed while it was rolled back; try again", a.Name)
		}
		a.Live, a.PreviousLive = a.PreviousLive, a.Live
		return nil
	})
	if err != nil {
		return api.App{}, err
	}
	s.emit(a, api.EventAppRolledBack, fmt.Sprintf("rolled back: live is %s again", a.Live), map[string]any{"live": a.Live, "previous_live": a.PreviousLive})
	return s.toAPI(a), nil
}

// ready reads an app that is ready.
func (s *Service) ready(ctx context.Context, id string) (*store.App, error) {
	a, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.State != api.AppReady {
		return nil, errdefs.Conflict("app_not_ready", "app %s is %s, not ready", a.Name, a.State)
	}
	return a, nil
}

func prefixed(p string, checks []api.Check) []api.Check {
	out := make([]api.Check, len(checks))
	for i, c := range checks {
		c.Name = p + c.Name
		out[i] = c
	}
	return out
}

// checkFailed is the error of a promotion whose checks of what failed.
func checkFailed(what string, checks []api.Check) error {
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c.Name+": "+c.Message)
		}
	}
	return errdefs.Conflict("promotion_check_failed", "%s failed its checks, live is unchanged: %s", what, strings.Join(failed, "; "))
}
