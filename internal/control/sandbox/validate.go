package sandbox

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/netpolicy"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

// Bounds on what a create request may carry.
const (
	maxEnvVars    = 256
	maxEnvBytes   = 128 << 10
	maxLabels     = 64
	maxLabelValue = 255
	maxPathLength = 4096
	minMemoryMB   = 16
)

var labelKey = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?$`)

// completed is a create request checked, with every default applied.
type completed struct {
	template string
	env      map[string]string
	cwd      string
	limits   api.Limits
	timeout  time.Duration
	labels   map[string]string
	root     bool
	network  api.NetworkPolicy
	image    bool // template names an image template, not a driver's own
	onExpiry string
}

// complete checks a create request for d and applies its defaults.
func (s *Service) complete(d driver.Driver, req api.CreateSandboxRequest) (completed, error) {
	caps := d.Capabilities()
	set := s.Settings()
	out := completed{template: req.Template, env: req.Env, cwd: req.Cwd, labels: req.Labels, root: req.Root}
	if req.Network != nil {
		pol, err := netpolicy.Parse(*req.Network)
		if err != nil {
			return out, err
		}
		out.network = api.NetworkPolicy{Egress: pol.Mode, Allow: req.Network.Allow}
	} else {
		out.network = api.NetworkPolicy{Egress: api.EgressPublic}
	}
	if err := confinesEgress(d, out.network); err != nil {
		return out, err
	}
	if req.Root && !caps.RootUser {
		return out, errdefs.Invalid("root_unsupported", "the %s driver cannot run commands as root inside a sandbox; the namespace driver can", d.Name())
	}
	if out.template == "" {
		out.template = s.cfg.DefaultTemplate
	}
	if !slices.Contains(caps.Templates, out.template) {
		if s.cfg.Templates == nil || !caps.Images {
			return out, errdefs.Invalid("invalid_template", "template %q does not exist; the %s driver has %s and starts no sandbox from an image", out.template, d.Name(), strings.Join(caps.Templates, ", "))
		}
		// An image template: resolved once the sandbox's record holds it
		// (create.go), so it cannot be deleted in between.
		out.image = true
	}
	if err := validateEnv(out.env); err != nil {
		return out, err
	}
	if len(out.cwd) > maxPathLength || strings.ContainsRune(out.cwd, 0) {
		return out, errdefs.Invalid("invalid_path", "cwd must be at most %d bytes with no NUL byte", maxPathLength)
	}
	var asked api.Limits
	if req.Limits != nil {
		if err := s.checkLimits(*req.Limits); err != nil {
			return out, err
		}
		asked = *req.Limits
	}
	limits, err := completeLimits(d.Name(), limitCaps(d), s.cfg.DefaultLimits, asked, req.LimitsBestEffort)
	if err != nil {
		return out, err
	}
	out.limits = limits
	switch {
	case req.TimeoutS < 0:
		return out, errdefs.Invalid("invalid_timeout", "timeout_s must not be negative")
	case req.TimeoutS == 0:
		out.timeout = seconds(set.DefaultTimeoutS)
	default:
		out.timeout = seconds(req.TimeoutS)
		if req.TimeoutS > set.MaxTimeoutS {
			return out, errdefs.Invalid("invalid_timeout", "timeout_s %d is over this server's maximum of %d", req.TimeoutS, set.MaxTimeoutS)
		}
	}
	if req.IdleTimeoutS < 0 || req.IdleTimeoutS > maxLifetimeS {
		return out, errdefs.Invalid("invalid_idle_timeout", "idle_timeout_s must be 0 (the server's) to %d", maxLifetimeS)
	}
	switch out.onExpiry = cmp.Or(req.OnExpiry, set.OnExpiry); {
	case !slices.Contains(expiryActions, out.onExpiry):
		return out, errdefs.Invalid("invalid_on_expiry", "on_expiry %q: use one of %v", req.OnExpiry, expiryActions)
	case out.onExpiry == api.OnExpiryPause && !d.Capabilities().Pause:
		return out, errdefs.New(errdefs.ErrUnsupported, "unsupported", "the %s driver cannot pause sandboxes; use on_expiry %s or %s", d.Name(), api.OnExpiryStop, api.OnExpiryDestroy)
	}
	return out, validateLabels(out.labels)
}

// checkLimits checks asked limits against the server's ceilings.
func (s *Service) checkLimits(req api.Limits) error {
	max := s.cfg.MaxLimits
	switch {
	case req.MemoryMB < 0 || req.CPU < 0 || req.Pids < 0 || req.DiskMB < 0:
		return errdefs.Invalid("invalid_limits", "limits must not be negative")
	case max.DiskMB > 0 && req.DiskMB > max.DiskMB:
		return errdefs.Invalid("invalid_limits", "disk_mb %d is over this server's maximum of %d", req.DiskMB, max.DiskMB)
	case req.MemoryMB != 0 && req.MemoryMB < minMemoryMB:
		return errdefs.Invalid("invalid_limits", "memory_mb must be at least %d", minMemoryMB)
	case req.MemoryMB > max.MemoryMB:
		return errdefs.Invalid("invalid_limits", "memory_mb %d is over this server's maximum of %d", req.MemoryMB, max.MemoryMB)
	case req.CPU > max.CPU:
		return errdefs.Invalid("invalid_limits", "cpu %g is over this server's maximum of %g", req.CPU, max.CPU)
	case req.Pids > max.Pids:
		return errdefs.Invalid("invalid_limits", "pids %d is over this server's maximum of %d", req.Pids, max.Pids)
	case req.Pids != 0 && req.Pids < 8:
		return errdefs.Invalid("invalid_limits", "pids must be at least 8")
	}
	return nil
}

// completeLimits is a sandbox's limits: each one asked for, else the
// server's default for it. A default the driver cannot enforce is left
// out (zero, unlimited) rather than shown as if enforced; an asked limit
// it cannot enforce is refused (400 limit_unsupported) unless bestEffort
// accepts it unenforced (unenforcedLimits names it then).
func completeLimits(drv string, caps driver.LimitCaps, def, asked api.Limits, bestEffort bool) (api.Limits, error) {
	var out api.Limits
	if un := unenforcedLimits(asked, caps); len(un) > 0 && !bestEffort {
		return out, errdefs.Invalid("limit_unsupported", "the %s driver cannot enforce %s; leave it out, or set limits_best_effort to accept it unenforced", drv, strings.Join(un, ", "))
	}
	out.MemoryMB = choose(asked.MemoryMB, def.MemoryMB, caps.Memory)
	out.CPU = choose(asked.CPU, def.CPU, caps.CPU)
	out.Pids = choose(asked.Pids, def.Pids, caps.Pids)
	out.DiskMB = choose(asked.DiskMB, def.DiskMB, caps.Disk)
	return out, nil
}

// choose is one limit: the asked value, else the default where the driver
// enforces it, else none.
func choose[T int | float64](asked, def T, enforced bool) T {
	switch {
	case asked != 0:
		return asked
	case enforced:
		return def
	}
	return 0
}

// limitCaps are the limits the service holds for sandboxes of d: the
// driver's, and a disk limit also where it can only measure the files
// (the disk policy stops a sandbox past it; disk.go).
func limitCaps(d driver.Driver) driver.LimitCaps {
	caps := d.Capabilities().Limits
	caps.Disk = enforcesDisk(d) != ""
	return caps
}

// unenforcedLimits names the limits set on a sandbox that caps does not
// enforce.
func unenforcedLimits(l api.Limits, caps driver.LimitCaps) []string {
	var out []string
	if l.MemoryMB != 0 && !caps.Memory {
		out = append(out, "memory_mb")
	}
	if l.CPU != 0 && !caps.CPU {
		out = append(out, "cpu")
	}
	if l.Pids != 0 && !caps.Pids {
		out = append(out, "pids")
	}
	if l.DiskMB != 0 && !caps.Disk {
		out = append(out, "disk_mb")
	}
	return out
}

func validateEnv(env map[string]string) error {
	if len(env) > maxEnvVars {
		return errdefs.Invalid("invalid_env", "at most %d environment variables", maxEnvVars)
	}
	n := 0
	for k, v := range env {
		n += len(k) + len(v)
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return errdefs.Invalid("invalid_env", "environment variable %q: names must be non-empty without '=' or NUL, values without NUL", k)
		}
	}
	if n > maxEnvBytes {
		return errdefs.Invalid("invalid_env", "environment is over %d bytes", maxEnvBytes)
	}
	return nil
}

func validateLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return errdefs.Invalid("invalid_labels", "at most %d labels", maxLabels)
	}
	for k, v := range labels {
		if !labelKey.MatchString(k) {
			return errdefs.Invalid("invalid_labels", "label key %q must be 1-63 characters of letters, digits, '.', '_', '/', '-'", k)
		}
		if len(v) > maxLabelValue || strings.ContainsRune(v, 0) {
			return errdefs.Invalid("invalid_labels", "label %q: value must be at most %d bytes without NUL", k, maxLabelValue)
		}
	}
	return nil
}
