package sandbox

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/store"
)

// A sandbox's lifetime runs only while it runs. A running sandbox has an
// expiry (ExpiresAt); stopping it stores what was left of its lifetime in
// TimeoutS and clears the expiry, so no clock destroys the files of a
// stopped sandbox; starting it sets the expiry again from what was left.
// SetTimeout gives a sandbox, running or stopped, a new lifetime from now
// (or from its next start).

// SetTimeout gives the caller's sandbox id a lifetime of req.TimeoutS
// seconds: from now when it runs, from its next start when it is stopped.
func (s *Service) SetTimeout(ctx context.Context, id string, req api.TimeoutRequest) (api.Sandbox, error) {
	if req.TimeoutS <= 0 {
		return api.Sandbox{}, errdefs.Invalid("invalid_timeout", "timeout_s must be positive")
	}
	if max := s.Settings().MaxTimeoutS; req.TimeoutS > max {
		return api.Sandbox{}, errdefs.Invalid("invalid_timeout", "timeout_s %d is over this server's maximum of %d", req.TimeoutS, max)
	}
	unlock := s.locks.Lock(id)
	defer unlock()
	now := time.Now()
	rec, err := s.store.UpdateSandbox(ctx, id, func(sb *store.Sandbox) error {
		if err := require(OpTimeout, sb); err != nil {
			return err
		}
		sb.TimeoutS = req.TimeoutS
		if sb.State == api.StateRunning {
			exp := now.Add(time.Duration(req.TimeoutS) * time.Second)
			sb.ExpiresAt = &exp
		}
		return nil
	})
	rec, err = s.updated(id, rec, err)
	if err != nil {
		return api.Sandbox{}, err
	}
	data := map[string]any{"timeout_s": rec.TimeoutS}
	msg := fmt.Sprintf("lifetime set to %d s from its next start", rec.TimeoutS)
	if rec.ExpiresAt != nil {
		data["expires_at"] = rec.ExpiresAt.UTC().Format(time.RFC3339)
		msg = fmt.Sprintf("lifetime set to %d s: it expires at %s", rec.TimeoutS, rec.ExpiresAt.UTC().Format(time.RFC3339))
	}
	s.emit(ctx, rec, api.EventSandboxTimeout, msg, data)
	return s.toAPI(rec), nil
}

// holdClock stops a stopping sandbox's clock: what is left of its
// lifetime, at least a second, is kept in TimeoutS.
func holdClock(sb *store.Sandbox, now time.Time) {
	if sb.ExpiresAt == nil {
		return
	}
	sb.TimeoutS = max(1, int(math.Ceil(sb.ExpiresAt.Sub(now).Seconds())))
	sb.ExpiresAt = nil
}

// restClock stops the clock of a sandbox its expiry stops: TimeoutS, its
// lifetime, is whole again at its next start.
func restClock(sb *store.Sandbox, _ time.Time) { sb.ExpiresAt = nil }

// runClock starts a starting sandbox's clock again from what was left.
func runClock(sb *store.Sandbox, now time.Time) {
	if sb.ExpiresAt != nil || sb.TimeoutS <= 0 {
		return
	}
	exp := now.Add(time.Duration(sb.TimeoutS) * time.Second)
	sb.ExpiresAt = &exp
}
