package confine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// rlimitNames are the resources a Rlimit may name.
var rlimitNames = []string{"nproc", "as", "data", "nofile", "fsize", "core", "cpu", "stack", "memlock"}

// Validate checks c without touching the process: known and unique rlimit
// names with cur <= max, absolute Landlock paths, connect ports only with
// DenyTCP, and RestrictSockets only with Seccomp (the filter enforces it).
// Apply calls it first.
func (c *Config) Validate() error {
	errs := []error{ValidateRlimits(c.Rlimits)}
	if c.RestrictSockets && !c.Seccomp {
		errs = append(errs, errors.New("confine: restrict_sockets needs seccomp, whose filter enforces it"))
	}
	if l := c.Landlock; l != nil {
		for _, p := range slices.Concat(l.ReadOnly, l.ReadWrite) {
			if !filepath.IsAbs(p) {
				errs = append(errs, fmt.Errorf("confine: landlock path %q is not absolute", p))
			}
		}
		if len(l.ConnectPorts) > 0 && !l.DenyTCP {
			errs = append(errs, errors.New("confine: landlock connect_ports needs deny_tcp"))
		}
		if slices.Contains(l.ConnectPorts, 0) {
			errs = append(errs, errors.New("confine: landlock connect_ports holds port 0"))
		}
	}
	return errors.Join(errs...)
}

// ValidateRlimits checks that every rlimit names a known resource once,
// with cur <= max.
func ValidateRlimits(rs []Rlimit) error {
	var errs []error
	seen := make(map[string]bool, len(rs))
	for _, r := range rs {
		switch {
		case !slices.Contains(rlimitNames, r.Resource):
			errs = append(errs, fmt.Errorf("confine: unknown rlimit %q (known: %v)", r.Resource, rlimitNames))
		case seen[r.Resource]:
			errs = append(errs, fmt.Errorf("confine: rlimit %q given twice", r.Resource))
		case r.Cur > r.Max:
			errs = append(errs, fmt.Errorf("confine: rlimit %q has cur %d above max %d", r.Resource, r.Cur, r.Max))
		}
		seen[r.Resource] = true
	}
	return errors.Join(errs...)
}
