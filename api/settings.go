package api

// Settings are the lifecycle knobs an admin changes while hutch runs
// (GET and PATCH /v1/settings). hutch serve's flags give their values at
// the first start; a PATCH is kept in the store, wins over the flags from
// then on, and applies to every sandbox, running ones included, without a
// restart. A PATCH names only the keys it changes; an unknown key is
// refused (400 unknown_setting), so is a key of ReadOnly (403
// setting_protected) and a value out of its range (400 invalid_setting).
type Settings struct {
	// DefaultTimeoutS is the lifetime of a sandbox whose create names
	// none; MaxTimeoutS the longest one may ask for.
	DefaultTimeoutS int `json:"default_timeout_s"`
	MaxTimeoutS     int `json:"max_timeout_s"`
	// OnExpiry is what a timeout does when the create names nothing:
	// "destroy", "stop" or "pause".
	OnExpiry string `json:"on_expiry"`
	// ExpiryWarningS is how long before its expiry a running sandbox gets
	// sandbox.expiring (0: never).
	ExpiryWarningS int `json:"expiry_warning_s"`
	// IdleTimeoutS is how long a sandbox may go without a call (exec,
	// API call, preview request, terminal input) or process output
	// before OnIdle is done to it (0: never). A sandbox's own idle_timeout_s
	// and keepalive_until come first.
	IdleTimeoutS int    `json:"idle_timeout_s"`
	OnIdle       string `json:"on_idle"` // "pause", "stop" or "destroy"
	// PausedStopAfterS stops a sandbox paused this long, freeing its
	// memory (0: never).
	PausedStopAfterS int `json:"paused_stop_after_s"`
	// MemoryLowPct: while the host's available memory is below this share
	// of its total, the idle window shrinks in proportion (down to
	// MinIdleS) and idle sandboxes are paused; below MemoryCriticalPct,
	// paused sandboxes are stopped, the longest paused first. 0 turns each
	// off.
	MemoryLowPct      int `json:"memory_low_pct"`
	MemoryCriticalPct int `json:"memory_critical_pct"`
	MinIdleS          int `json:"min_idle_s"`
}

// SettingsView is the answer of GET and PATCH /v1/settings: the settings
// in force, and what this server runs with that only a restart changes.
type SettingsView struct {
	Settings Settings `json:"settings"`
	// ReadOnly are the server's other settings (its flags); a PATCH that
	// names one is refused with 403 setting_protected.
	ReadOnly map[string]any `json:"read_only"`
}

// EventSettingsChanged is recorded in the admin's tenant's log on each
// PATCH /v1/settings that changed something; its data holds the keys
// changed, each with its old and new value.
const EventSettingsChanged = "settings.changed"
