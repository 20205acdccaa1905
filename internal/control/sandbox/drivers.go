package sandbox

import (
	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/store"
)

// drivers are the drivers this server runs, as the service finds the one
// a sandbox or an operation needs.
type drivers struct {
	*driver.Set
	// snapshotDir holds snapshots' files; "" offers no snapshots.
	snapshotDir string
}

// of returns the driver recorded with a sandbox, or a 503
// driver_unavailable error when this server has not loaded it: the
// sandbox is then left as it is, for a server that has the driver.
func (ds drivers) of(rec *store.Sandbox) (driver.Driver, error) {
	if d, ok := ds.Get(rec.Driver); ok {
		return d, nil
	}
	why := ds.Missing()[rec.Driver]
	if why == "" {
		why = "this build has no such driver"
	}
	return nil, errdefs.Unavailable("driver_unavailable", "sandbox %s runs on the %s driver, which this server has not loaded (%s)", rec.ID, rec.Driver, why)
}

// pick returns the driver a create asks for, or the default.
func (ds drivers) pick(name string) (driver.Driver, error) {
	if name == "" {
		return ds.Default(), nil
	}
	if d, ok := ds.Get(name); ok {
		return d, nil
	}
	if why, ok := ds.Missing()[name]; ok {
		return nil, errdefs.Invalid("driver_unavailable", "the %s driver is not loaded on this server (%s); it has %s", name, why, ds.Names())
	}
	return nil, errdefs.Invalid("invalid_driver", "no driver %q; this server has %s", name, ds.Names())
}

// startStop is the driver of a sandbox that is to stop or start,
// once it is sure the driver can.
func (ds drivers) startStop(rec *store.Sandbox) (driver.Driver, error) {
	d, err := ds.of(rec)
	if err != nil {
		return nil, err
	}
	if !d.Capabilities().StartStop {
		return nil, errdefs.New(errdefs.ErrUnsupported, "unsupported", "the %s driver cannot stop and start sandboxes", d.Name())
	}
	return d, nil
}

// pauser is the driver of rec, once it is sure the driver can pause.
func (ds drivers) pauser(rec *store.Sandbox) (driver.Driver, driver.Pauser, error) {
	d, err := ds.of(rec)
	if err != nil {
		return nil, nil, err
	}
	p, ok := d.(driver.Pauser)
	if !ok || !d.Capabilities().Pause {
		return nil, nil, errdefs.New(errdefs.ErrUnsupported, "unsupported", "the %s driver cannot pause sandboxes on this host", d.Name())
	}
	return d, p, nil
}

// snapshotter is the driver of rec, once it is sure the driver can copy
// sandboxes' files.
func (ds drivers) snapshotter(rec *store.Sandbox) (driver.Driver, driver.Snapshotter, error) {
	d, err := ds.of(rec)
	if err != nil {
		return nil, nil, err
	}
	sn, ok := d.(driver.Snapshotter)
	if !ok || !d.Capabilities().Snapshots || ds.snapshotDir == "" {
		return nil, nil, errdefs.New(errdefs.ErrUnsupported, "snapshots_unsupported",
			"the %s driver on this host cannot snapshot sandboxes (the namespace driver can, as root where the data directory's filesystem id-maps mounts, or rootless)", d.Name())
	}
	return d, sn, nil
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
		"disk_watch":     enforcesDisk(d) == api.DiskEnforcedByStop,
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
			Default:        defaultLimits(cfg.DefaultLimits, limitCaps(d)),
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
