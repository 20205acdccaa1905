package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/store"
	"github.com/hutchdev/hutch/internal/tenancy"
)

// Recover runs once at start-up, before the API serves: it re-attaches to
// the sandboxes the store says are running, fails the ones a crash caught
// mid-create, and sweeps what the driver finds that the store does not
// know.
func (s *Service) Recover(ctx context.Context) error {
	ctx = tenancy.System(ctx)
	recs, err := s.store.AllSandboxes(ctx, api.StateCreating, api.StateRunning)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	for _, rec := range recs {
		if rec.State == api.StateCreating {
			s.failOrphan(ctx, rec, "the control plane restarted while the sandbox was being created")
			continue
		}
		s.reattach(ctx, rec)
	}
	return s.sweep(ctx)
}

func (s *Service) reattach(ctx context.Context, rec *store.Sandbox) {
	h, err := decodeHandle(rec.Handle)
	if err != nil {
		s.failOrphan(ctx, rec, "its driver handle could not be read")
		return
	}
	st, err := s.driver.Recover(ctx, h)
	if err == nil && st.State == driver.Running {
		a := s.setAgent(rec.ID, h)
		if _, err = a.Health(ctx); err == nil {
			s.startEgress(ctx, rec, h)
			s.log.Info("sandbox recovered", "sandbox.id", rec.ID)
			s.reattachProcesses(ctx, rec, a)
			return
		}
	}
	s.dropAgent(rec.ID)
	reason := "its agent was not running after the control plane restarted"
	if err != nil {
		reason = fmt.Sprintf("%s (%s)", reason, err)
	}
	_, uerr := s.store.UpdateSandbox(ctx, rec.ID, func(sb *store.Sandbox) error {
		sb.State = api.StateStopped
		sb.Error = reason
		return nil
	})
	if uerr != nil {
		s.log.Error("mark sandbox stopped", "sandbox.id", rec.ID, "err", uerr)
	} else {
		s.emit(ctx, rec, api.EventSandboxStopped, "sandbox stopped: "+reason, map[string]any{"reason": reason})
	}
	// Whatever is left of its processes goes; its files stay for Start.
	_ = s.driver.Stop(ctx, h)
	s.log.Warn("sandbox not recovered", "sandbox.id", rec.ID, "reason", reason)
}

func (s *Service) failOrphan(ctx context.Context, rec *store.Sandbox, reason string) {
	if h, err := decodeHandle(rec.Handle); err == nil {
		tctx, cancel := s.teardownContext(ctx)
		_ = s.driver.Destroy(tctx, h)
		cancel()
	}
	_, err := s.store.UpdateSandbox(ctx, rec.ID, func(sb *store.Sandbox) error {
		sb.State = api.StateFailed
		sb.Error = reason
		sb.Handle = nil
		return nil
	})
	if err != nil {
		s.log.Error("mark sandbox failed", "sandbox.id", rec.ID, "err", err)
	} else {
		s.emitFailed(ctx, rec, reason)
	}
}

// sweep removes what the driver made that no live sandbox claims.
func (s *Service) sweep(ctx context.Context) error {
	sw, ok := s.driver.(driver.Sweeper)
	if !ok {
		return nil
	}
	live, err := s.store.AllSandboxes(ctx, api.StateCreating, api.StateRunning, api.StateStopped)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	known := make(map[string]bool, len(live))
	for _, r := range live {
		known[r.ID] = true
	}
	removed, err := sw.Sweep(ctx, func(id string) bool { return known[id] })
	for _, id := range removed {
		s.log.Info("swept orphaned sandbox", "sandbox.id", id)
	}
	return err
}

// Run reaps expired sandboxes and reports out-of-memory kills every tick,
// and sweeps orphans every sweepEvery, until ctx ends.
func (s *Service) Run(ctx context.Context, tick, sweepEvery time.Duration) {
	ctx = tenancy.System(ctx)
	t := time.NewTicker(tick)
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.reapExpired(ctx, now)
			s.watchOOM(ctx)
			if now.Sub(lastSweep) >= sweepEvery {
				lastSweep = now
				if err := s.sweep(ctx); err != nil {
					s.log.Warn("sweep", "err", err)
				}
			}
		}
	}
}

func (s *Service) reapExpired(ctx context.Context, now time.Time) {
	recs, err := s.store.AllSandboxes(ctx, api.StateRunning, api.StateStopped)
	if err != nil {
		s.log.Warn("reap expired", "err", err)
		return
	}
	for _, rec := range recs {
		if rec.ExpiresAt == nil || rec.ExpiresAt.After(now) {
			continue
		}
		s.emitExpired(ctx, rec)
		tctx, cancel := s.teardownContext(ctx)
		if err := s.destroy(tctx, rec); err != nil {
			s.log.Warn("destroy expired sandbox", "sandbox.id", rec.ID, "err", err)
		} else {
			s.log.Info("sandbox expired", "sandbox.id", rec.ID, "timeout_s", rec.TimeoutS)
		}
		cancel()
	}
}
