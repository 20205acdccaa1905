package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/store"
)

// Idle reaping. A running sandbox is busy while a call to it is in
// flight (a terminal, a stream, a watch) and for its idle window after
// the last call began or ended through the door (door.go) or its
// processes last wrote output. Once idle for its window, and not kept
// alive (KeepaliveUntil), the idle action in the settings (on_idle) is
// done to it: pause, stop or destroy, each an event with its reason.
//
// Output is read from the agent's process list (the bytes each process
// wrote) only for a sandbox idle for half its window or more, so a quiet
// fleet costs no agent calls: output in the second half of the window
// counts at once, output in the first half as of the half. The count
// starts at zero when the service attaches to the agent: after a resume
// or a restart, output already written counts as new once.
//
// Under host memory pressure (memory.go) the window shrinks and the
// action is a pause; paused sandboxes are stopped after
// paused_stop_after_s, and under critical pressure the longest paused
// first.

// outputProbeTimeout bounds the read of a sandbox's process list.
const outputProbeTimeout = 2 * time.Second

// Keepalive keeps idle actions off the caller's sandbox id for the next
// req.ForS seconds; 0 ends a keepalive. Its timeout still runs.
func (s *Service) Keepalive(ctx context.Context, id string, req api.KeepaliveRequest) (api.Sandbox, error) {
	if req.ForS < 0 || req.ForS > maxLifetimeS {
		return api.Sandbox{}, errdefs.Invalid("invalid_keepalive", "for_s must be 0 to %d", maxLifetimeS)
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.UpdateSandbox(ctx, id, func(sb *store.Sandbox) error {
		if err := require(OpKeepalive, sb); err != nil {
			return err
		}
		sb.KeepaliveUntil = nil
		if req.ForS > 0 {
			until := time.Now().Add(seconds(req.ForS))
			sb.KeepaliveUntil = &until
		}
		return nil
	})
	if err != nil {
		return api.Sandbox{}, err
	}
	return s.toAPI(rec), nil
}

// reapIdle does the idle and memory policy's actions, each tick.
func (s *Service) reapIdle(ctx context.Context, now time.Time) {
	set := s.Settings()
	p := s.pressure(set)
	recs, err := s.store.AllSandboxes(ctx, api.StateRunning, api.StatePaused)
	if err != nil {
		s.log.Warn("reap idle", "err", err)
		return
	}
	var paused []*store.Sandbox
	for _, rec := range recs {
		if !s.owns(rec) {
			continue
		}
		if rec.State == api.StatePaused {
			paused = append(paused, rec)
			continue
		}
		window := p.window(seconds(cmp0(rec.IdleTimeoutS, set.IdleTimeoutS)))
		if window <= 0 || (rec.KeepaliveUntil != nil && rec.KeepaliveUntil.After(now)) {
			continue
		}
		if idle := s.idleFor(ctx, rec.ID, window, now); idle >= window {
			s.idleAction(ctx, rec.ID, idle, p.action(set.OnIdle), p.reason, now)
		}
	}
	s.stopPaused(ctx, paused, set, p, now)
}

// cmp0 is a, or b when a is 0.
func cmp0(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// idleFor is how long sandbox id has gone without a call or output, as
// far as a sandbox busy for less than window needs to be known.
func (s *Service) idleFor(ctx context.Context, id string, window time.Duration, now time.Time) time.Duration {
	s.mu.Lock()
	calls := s.calls[id]
	last, seen := s.active[id]
	at, attached := s.agents[id]
	if calls > 0 || !seen {
		// Busy, or first seen (this server just started): a new window.
		s.active[id] = now
		s.mu.Unlock()
		return 0
	}
	s.mu.Unlock()
	idle := now.Sub(last)
	if idle < window/2 || !attached {
		return idle
	}
	pctx, cancel := context.WithTimeout(ctx, outputProbeTimeout)
	defer cancel()
	list, err := at.client.ListProcesses(pctx)
	if err != nil {
		return 0 // unknown: not idle
	}
	var out int64
	for _, p := range list.Processes {
		out += p.OutputBytes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.output[id] != out {
		s.output[id] = out
		s.active[id] = now
		return 0
	}
	return idle
}

// idleAction does action to sandbox id, idle for idle, under its lock,
// once it is sure the sandbox is still running and idle.
func (s *Service) idleAction(ctx context.Context, id string, idle time.Duration, action, reason string, now time.Time) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StateRunning || (rec.KeepaliveUntil != nil && rec.KeepaliveUntil.After(now)) {
		return
	}
	s.mu.Lock()
	busy := s.calls[id] > 0 || s.active[id].After(now.Add(-idle))
	s.mu.Unlock()
	if busy {
		return
	}
	if _, _, err := s.pauserOf(rec); action == api.OnExpiryPause && err != nil {
		action = api.OnExpiryStop
	}
	idleS := int(idle.Round(time.Second) / time.Second)
	s.emit(ctx, rec, api.EventSandboxIdle, fmt.Sprintf("sandbox idle for %d s: %s (%s)", idleS, action, reason),
		map[string]any{"idle_s": idleS, "action": action, "reason": reason})
	data := map[string]any{"reason": reason}
	switch action {
	case api.OnExpiryPause:
		_, err = s.pause(ctx, rec, holdClock, data)
	case api.OnExpiryStop:
		_, err = s.stop(ctx, rec, fmt.Sprintf("sandbox stopped: idle for %d s (%s)", idleS, reason), holdClock, data)
	default:
		tctx, cancel := s.teardownContext(ctx)
		defer cancel()
		err = s.destroy(tctx, rec)
	}
	if err != nil {
		s.log.Warn("idle action", logattr.Sandbox(id), "action", action, "err", err)
		return
	}
	s.log.Info("idle sandbox", logattr.Sandbox(id), "action", action, "reason", reason, "idle_s", idleS)
}
