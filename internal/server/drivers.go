package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/host/storage"
	"github.com/hutchdev/hutch/internal/server/config"

	// The drivers this build runs: each registers itself.
	_ "github.com/hutchdev/hutch/internal/runtime/driver/kubernetes"
	_ "github.com/hutchdev/hutch/internal/runtime/driver/namespace"
	_ "github.com/hutchdev/hutch/internal/runtime/driver/process"
)

// openDrivers probes the data directory's storage and opens every
// registered driver on it (loadDrivers).
func (s *Server) openDrivers(ctx context.Context, p *parts) error {
	p.storage, p.storageInfo = probeStorage(s.cfg.DataDir, s.log)
	drivers, why, closeDrivers, err := loadDrivers(ctx, s.cfg, p.node, driver.Registered(), p.storage, s.log)
	if err != nil {
		return err
	}
	s.onClose("drivers", func(context.Context) error { closeDrivers(); return nil })
	p.drivers, p.driversWhy = drivers, why
	return nil
}

// loadDrivers builds and opens every registered driver and picks the
// default for new sandboxes: the configured one, or with "auto" the first
// in order of preference that proves itself on this host (it creates, uses
// and destroys a test sandbox). Auto passes over a driver only when this
// host cannot run it (driver.ErrHostUnsupported); any other failure of the
// driver it would choose stops the start, with its fix in the message. A
// driver other than the default that does not open is left out and named
// in the set's Missing, and its sandboxes are unavailable. It returns the
// set, why the default was chosen, and a close for every opened driver
// that works after any error. Only cfg.Drivers are opened when it names
// any. regs is driver.Registered() but in tests.
func loadDrivers(ctx context.Context, cfg config.Config, node string, regs []driver.Registration, store storage.Backend, log *slog.Logger) (*driver.Set, string, func(), error) {
	agent, err := findAgent(cfg.AgentPath)
	if err != nil {
		return nil, "", func() {}, err
	}
	loaded := map[string]driver.Driver{}
	missing := map[string]string{}
	closeAll := func() {
		for name, d := range loaded {
			if err := d.Close(); err != nil {
				log.Warn("close driver", "driver", name, "err", err)
			}
		}
	}
	var fallbacks []string // why auto passed over a driver
	def := cfg.Driver
	for _, reg := range regs {
		if len(cfg.Drivers) > 0 && !slices.Contains(cfg.Drivers, reg.Name) {
			continue
		}
		d, err := open(ctx, reg, cfg, node, agent, store, log)
		if errors.Is(err, driver.ErrNotConfigured) && reg.Name != cfg.Driver {
			log.Debug("driver not configured", "driver", reg.Name, "err", err)
			continue
		}
		if err != nil {
			missing[reg.Name] = err.Error()
			if reg.Name == cfg.Driver {
				closeAll()
				return nil, "", func() {}, err
			}
			if cfg.Driver == "auto" && reg.Auto > 0 && def == "auto" && !errors.Is(err, driver.ErrHostUnsupported) {
				closeAll()
				return nil, "", func() {}, fmt.Errorf("%w (--driver auto does not fall back from the %s driver for a cause that can be fixed)", err, reg.Name)
			}
			log.Warn("driver not loaded", "driver", reg.Name, "err", err)
			if def == "auto" {
				fallbacks = append(fallbacks, err.Error())
			}
			continue
		}
		loaded[reg.Name] = d
		if def != "auto" || reg.Auto <= 0 {
			continue
		}
		p, ok := d.(driver.Prober)
		if !ok {
			def = reg.Name
			continue
		}
		start := time.Now()
		switch err := p.Probe(ctx); {
		case err == nil:
			def = reg.Name
			fallbacks = append(fallbacks, fmt.Sprintf("the %s driver created, used and destroyed a test sandbox in %d ms", reg.Name, time.Since(start).Milliseconds()))
		case errors.Is(err, driver.ErrHostUnsupported):
			log.Warn("driver cannot run sandboxes here", "driver", reg.Name, "err", err)
			fallbacks = append(fallbacks, fmt.Sprintf("the %s driver cannot run here: %v", reg.Name, err))
		default:
			closeAll()
			return nil, "", func() {}, fmt.Errorf("the %s driver failed its test sandbox: %w", reg.Name, err)
		}
	}
	if def == "auto" {
		closeAll()
		return nil, "", func() {}, fmt.Errorf("no driver can run sandboxes on this host: %v", fallbacks)
	}
	why := "chosen by configuration"
	if cfg.Driver == "auto" {
		why = "auto: " + strings.Join(fallbacks, "; ")
		if d := loaded[def]; d.Capabilities().Isolation != api.IsolationFull {
			why += "; sandboxes fall back to the DEGRADED " + def + " driver"
		}
	}
	set, err := driver.NewSet(def, loaded, missing)
	if err != nil {
		closeAll()
		return nil, "", func() {}, err
	}
	return set, why, closeAll, nil
}

// open builds one driver and prepares the host for it; a driver that
// fails to open is closed again.
func open(ctx context.Context, reg driver.Registration, cfg config.Config, node, agent string, store storage.Backend, log *slog.Logger) (driver.Driver, error) {
	d, err := reg.Factory(driver.Options{
		Dir:             filepath.Join(cfg.DataDir, "sandboxes", reg.Name),
		AgentPath:       agent,
		WarmPool:        cfg.WarmPool,
		CgroupParent:    cfg.CgroupParent,
		ReserveMemoryMB: cfg.ReserveMemoryMB,
		ReservePids:     cfg.ReservePids,
		Storage:         store,
		FreezeTimeout:   cfg.FreezeTimeout,
		Node:            node,
		Kubernetes:      cfg.Kubernetes,
		Log:             log.With("driver", reg.Name),
	})
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", reg.Name, err)
	}
	if err := d.Open(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// findAgent locates hutch-agent: the configured path, else beside the
// running binary, else on $PATH.
func findAgent(configured string) (string, error) {
	if configured != "" {
		return filepath.Abs(configured)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "hutch-agent")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("hutch-agent"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("hutch-agent not found beside the hutch binary or on $PATH; build both with 'go build -o bin/ ./cmd/...' or pass --agent")
}
