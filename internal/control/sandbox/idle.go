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

// Idle sandboxes. A running sandbox is busy while a call to it is in
// flight (a terminal, a stream, a watch) and for its idle window after
// the last call began or ended through the door (door.go) or it was
// otherwise busy. The idle policy (internal/control/policy) reads that
// (Activity), and the output its processes wrote (OutputBytes), and asks
// for the idle action in the settings (on_idle): Idle pauses, stops or
// destroys a sandbox still idle once its lock is held, each an event
// with its reason. Under memory pressure the policy shrinks the window,
// pauses, and stops paused sandboxes (StopPaused).

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
	rec, err = s.updated(id, rec, err)
	if err != nil {
		return api.Sandbox{}, err
	}
	return s.toAPI(rec), nil
}

// Activity is what the door saw of a live sandbox: its calls in flight,
// when it was last busy, and when the service last attached to its agent.
type Activity struct {
	Calls int
	Last  time.Time
	Since time.Time
}

// Activity is sandbox id's, and false while it is not attached here (it
// is paused, stopped or another server's).
func (s *Service) Activity(id string) (Activity, bool) {
	lv := s.lookup(id)
	if lv == nil {
		return Activity{}, false
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return Activity{Calls: lv.calls, Last: lv.active, Since: lv.since}, lv.client != nil
}

// Busy records that sandbox id was busy at at (its processes wrote, or a
// call was in flight), while it is attached.
func (s *Service) Busy(id string, at time.Time) {
	if lv := s.lookup(id); lv != nil {
		lv.touch(at)
	}
}

// outputProbeTimeout bounds the read of a sandbox's process list.
const outputProbeTimeout = 2 * time.Second

// OutputBytes is how many bytes the processes of attached sandbox id
// have written since its agent started, read from its agent's process
// list. It is no call through the door: asking is not activity.
func (s *Service) OutputBytes(ctx context.Context, id string) (int64, error) {
	lv := s.lookup(id)
	if lv == nil {
		return 0, notLive(id)
	}
	a := lv.agent()
	if a == nil {
		return 0, notLive(id)
	}
	ctx, cancel := context.WithTimeout(ctx, outputProbeTimeout)
	defer cancel()
	list, err := a.ListProcesses(ctx)
	if err != nil {
		return 0, err
	}
	var out int64
	for _, p := range list.Processes {
		out += p.OutputBytes
	}
	return out, nil
}

// notLive is the error of a sandbox the service is not attached to.
func notLive(id string) error {
	return errdefs.Conflict("sandbox_not_running", "sandbox %s is not running on this server", id)
}

// Idle does action (on_idle's: pause, stop or destroy) to sandbox id,
// idle for idle by now, for reason, under its lock, once it is sure the
// sandbox is still running, not kept alive and idle. A pause where its
// driver cannot is a stop.
func (s *Service) Idle(ctx context.Context, id string, idle time.Duration, action, reason string, now time.Time) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StateRunning || (rec.KeepaliveUntil != nil && rec.KeepaliveUntil.After(now)) {
		return
	}
	if a, ok := s.Activity(id); !ok || a.Calls > 0 || a.Last.After(now.Add(-idle)) {
		return
	}
	if _, _, err := s.drivers.pauser(rec); action == api.OnExpiryPause && err != nil {
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

// StopPaused stops sandbox id, paused too long or under memory pressure
// (why, for its event, and reason), if it is still paused once its lock
// is held.
func (s *Service) StopPaused(ctx context.Context, id, why, reason string) {
	unlock := s.locks.Lock(id)
	defer unlock()
	rec, err := s.store.GetSandbox(ctx, id)
	if err != nil || rec.State != api.StatePaused {
		return
	}
	if _, err := s.stop(ctx, rec, "paused sandbox stopped: "+why, holdClock, map[string]any{"reason": reason}); err != nil {
		s.log.Warn("stop paused sandbox", logattr.Sandbox(id), "err", err)
	}
}
