package sandbox

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/egress"
	"github.com/hutchdev/hutch/internal/errdefs"
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

// settled is a create request with every default applied.
type settled struct {
	template string
	env      map[string]string
	cwd      string
	limits   api.Limits
	timeout  time.Duration
	labels   map[string]string
	root     bool
	network  api.NetworkPolicy
}

func (s *Service) settle(req api.CreateSandboxRequest) (settled, error) {
	out := settled{template: req.Template, env: req.Env, cwd: req.Cwd, labels: req.Labels, limits: s.cfg.DefaultLimits, root: req.Root}
	if req.Network != nil {
		pol, err := egress.Parse(*req.Network)
		if err != nil {
			return out, err
		}
		out.network = api.NetworkPolicy{Egress: pol.Mode, Allow: req.Network.Allow}
	} else {
		out.network = api.NetworkPolicy{Egress: api.EgressPublic}
	}
	if req.Root && !s.caps.RootUser {
		return out, errdefs.Invalid("root_unsupported", "the %s driver cannot run commands as root inside a sandbox; the namespace driver can", s.driver.Name())
	}
	if out.template == "" {
		out.template = s.cfg.DefaultTemplate
	}
	if !slices.Contains(s.caps.Templates, out.template) {
		return out, errdefs.Invalid("invalid_template", "template %q does not exist; this server has %s", out.template, strings.Join(s.caps.Templates, ", "))
	}
	if err := validateEnv(out.env); err != nil {
		return out, err
	}
	if len(out.cwd) > maxPathLength || strings.ContainsRune(out.cwd, 0) {
		return out, errdefs.Invalid("invalid_path", "cwd must be at most %d bytes with no NUL byte", maxPathLength)
	}
	if req.Limits != nil {
		if err := s.settleLimits(&out.limits, *req.Limits); err != nil {
			return out, err
		}
	}
	switch {
	case req.TimeoutS < 0:
		return out, errdefs.Invalid("invalid_timeout", "timeout_s must not be negative")
	case req.TimeoutS == 0:
		out.timeout = s.cfg.DefaultTimeout
	default:
		out.timeout = time.Duration(req.TimeoutS) * time.Second
		if out.timeout > s.cfg.MaxTimeout {
			return out, errdefs.Invalid("invalid_timeout", "timeout_s %d is over this server's maximum of %d", req.TimeoutS, int(s.cfg.MaxTimeout.Seconds()))
		}
	}
	return out, validateLabels(out.labels)
}

func (s *Service) settleLimits(l *api.Limits, req api.Limits) error {
	max := s.cfg.MaxLimits
	switch {
	case req.MemoryMB < 0 || req.CPU < 0 || req.Pids < 0:
		return errdefs.Invalid("invalid_limits", "limits must not be negative")
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
	if req.MemoryMB != 0 {
		l.MemoryMB = req.MemoryMB
	}
	if req.CPU != 0 {
		l.CPU = req.CPU
	}
	if req.Pids != 0 {
		l.Pids = req.Pids
	}
	return nil
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
