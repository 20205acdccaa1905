package sandbox

import (
	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// driverOf returns the driver recorded with a sandbox, or a 503
// driver_unavailable error when this server has not loaded it: the
// sandbox is then left as it is, for a server that has the driver.
func (s *Service) driverOf(rec *store.Sandbox) (driver.Driver, error) {
	if d, ok := s.drivers.Get(rec.Driver); ok {
		return d, nil
	}
	why := s.drivers.Missing()[rec.Driver]
	if why == "" {
		why = "this build has no such driver"
	}
	return nil, errdefs.Unavailable("driver_unavailable", "sandbox %s runs on the %s driver, which this server has not loaded (%s)", rec.ID, rec.Driver, why)
}

// pickDriver returns the driver a create asks for, or the default.
func (s *Service) pickDriver(name string) (driver.Driver, error) {
	if name == "" {
		return s.drivers.Default(), nil
	}
	if d, ok := s.drivers.Get(name); ok {
		return d, nil
	}
	if why, ok := s.drivers.Missing()[name]; ok {
		return nil, errdefs.Invalid("driver_unavailable", "the %s driver is not loaded on this server (%s); it has %s", name, why, s.drivers.Names())
	}
	return nil, errdefs.Invalid("invalid_driver", "no driver %q; this server has %s", name, s.drivers.Names())
}

// Drivers describes every driver of this build for GET /v1/info: the
// loaded ones with what they can do, the others with why they are not.
func (s *Service) Drivers() []api.DriverInfo {
	def := s.drivers.Default().Name()
	var out []api.DriverInfo
	for _, d := range s.drivers.Loaded() {
		c := d.Capabilities()
		out = append(out, api.DriverInfo{
			Name: d.Name(), Default: d.Name() == def, Loaded: true,
			Isolation: c.Isolation, Degraded: append([]string{}, c.Degraded...), Templates: c.Templates,
			Features: Features(d),
		})
	}
	for name, why := range s.drivers.Missing() {
		out = append(out, api.DriverInfo{Name: name, Error: why})
	}
	return out
}

// DefaultDriver is the driver new sandboxes get unless they name another.
func (s *Service) DefaultDriver() driver.Driver { return s.drivers.Default() }

// Features are what a driver offers, as GET /v1/info names them.
func Features(d driver.Driver) map[string]bool {
	c := d.Capabilities()
	_, oom := d.(driver.OOMCounter)
	_, egress := d.(driver.Egresser)
	return map[string]bool{
		"start_stop":     c.StartStop,
		"memory_limit":   c.Limits.Memory,
		"cpu_limit":      c.Limits.CPU,
		"pids_limit":     c.Limits.Pids,
		"disk_limit":     c.Limits.Disk,
		"root_user":      c.RootUser,
		"oom_report":     oom,
		"egress_channel": egress,
		"images":         c.Images,
		"snapshots":      c.Snapshots,
		"pause":          c.Pause,
	}
}

// Info is the server's side of GET /v1/info: the default driver, every
// driver, and the limits; the API adds its version.
func (s *Service) Info() api.Info {
	d := s.drivers.Default()
	c := d.Capabilities()
	cfg := s.cfg
	return api.Info{
		Node:      cfg.Node,
		Driver:    d.Name(),
		Isolation: c.Isolation,
		Degraded:  append([]string{}, c.Degraded...),
		Templates: c.Templates,
		Limits: api.InfoLimits{
			Default:        defaultLimits(cfg.DefaultLimits, c.Limits),
			Max:            cfg.MaxLimits,
			MaxTimeoutS:    s.Settings().MaxTimeoutS,
			MaxFileBytes:   cfg.MaxFileBytes,
			MaxOutputBytes: cfg.MaxOutputBytes,
		},
		Features: Features(d),
		Drivers:  s.Drivers(),
	}
}

// defaultLimits are the limits a sandbox of a driver that enforces caps
// gets when it asks for none.
func defaultLimits(def api.Limits, caps driver.LimitCaps) api.Limits {
	l, _ := completeLimits("", caps, def, api.Limits{}, false)
	return l
}
