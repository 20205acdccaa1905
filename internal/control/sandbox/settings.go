package sandbox

import (
	"fmt"
	"slices"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// The lifecycle settings (api.Settings) are read live: each use loads the
// ones in force, so a change (ApplySettings, from PATCH /v1/settings)
// reaches running sandboxes at the next tick without a restart.

// maxLifetimeS bounds every duration setting: 30 days.
const maxLifetimeS = 30 * 24 * 3600

// Settings returns the lifecycle settings in force.
func (s *Service) Settings() api.Settings { return *s.settings.Load() }

// ApplySettings puts v in force once CheckSettings accepts it.
func (s *Service) ApplySettings(v api.Settings) error {
	if err := CheckSettings(v); err != nil {
		return err
	}
	s.settings.Store(&v)
	return nil
}

// CheckSettings says what is wrong with v, as a 400 invalid_setting that
// names the key and its range.
func CheckSettings(v api.Settings) error {
	bad := func(key string, val any, want string) error {
		return errdefs.Invalid("invalid_setting", "%s %v: %s", key, val, want)
	}
	seconds := func(key string, n, lo, hi int) error {
		if n < lo || n > hi {
			return bad(key, n, fmt.Sprintf("must be %d to %d seconds", lo, hi))
		}
		return nil
	}
	for _, c := range []struct {
		key       string
		n, lo, hi int
	}{
		{"max_timeout_s", v.MaxTimeoutS, 1, maxLifetimeS},
		{"default_timeout_s", v.DefaultTimeoutS, 1, v.MaxTimeoutS},
		{"expiry_warning_s", v.ExpiryWarningS, 0, maxLifetimeS},
		{"idle_timeout_s", v.IdleTimeoutS, 0, maxLifetimeS},
		{"paused_stop_after_s", v.PausedStopAfterS, 0, maxLifetimeS},
		{"min_idle_s", v.MinIdleS, 0, maxLifetimeS},
	} {
		if err := seconds(c.key, c.n, c.lo, c.hi); err != nil {
			return err
		}
	}
	if !slices.Contains(expiryActions, v.OnExpiry) {
		return bad("on_expiry", v.OnExpiry, fmt.Sprintf("use one of %v", expiryActions))
	}
	if !slices.Contains(idleActions, v.OnIdle) {
		return bad("on_idle", v.OnIdle, fmt.Sprintf("use one of %v", idleActions))
	}
	if v.MemoryLowPct < 0 || v.MemoryLowPct > 90 {
		return bad("memory_low_pct", v.MemoryLowPct, "must be 0 to 90")
	}
	if v.MemoryCriticalPct < 0 || v.MemoryCriticalPct > v.MemoryLowPct {
		return bad("memory_critical_pct", v.MemoryCriticalPct, fmt.Sprintf("must be 0 to memory_low_pct (%d)", v.MemoryLowPct))
	}
	return nil
}

// expiryActions and idleActions are what a timeout and an idle window may
// do.
var (
	expiryActions = []string{api.OnExpiryDestroy, api.OnExpiryStop, api.OnExpiryPause}
	idleActions   = []string{api.OnExpiryPause, api.OnExpiryStop, api.OnExpiryDestroy}
)

// seconds turns a setting into a duration.
func seconds(n int) time.Duration { return time.Duration(n) * time.Second }
