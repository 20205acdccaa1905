package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/hutchdev/hutch/internal/config"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/namespace"
	"github.com/hutchdev/hutch/internal/driver/process"
)

// factories is the driver registry: every driver this build can run.
var factories = map[string]func(cfg config.Config, agent string, log *slog.Logger) (driver.Driver, error){
	namespace.Name: func(cfg config.Config, agent string, log *slog.Logger) (driver.Driver, error) {
		return namespace.New(namespace.Config{Dir: filepath.Join(cfg.DataDir, "sandboxes", "namespace"), AgentPath: agent,
			WarmPool: cfg.WarmPool, CgroupParent: cfg.CgroupParent, Log: log})
	},
	process.Name: func(cfg config.Config, agent string, log *slog.Logger) (driver.Driver, error) {
		return process.New(process.Config{Dir: filepath.Join(cfg.DataDir, "sandboxes", "process"), AgentPath: agent, WarmPool: cfg.WarmPool, Log: log})
	},
}

// prober is a driver that can prove it works on this host.
type prober interface {
	Probe(ctx context.Context) error
}

// selectDriver builds the configured driver; "auto" picks the namespace
// driver when it proves itself on this host (it creates, uses and
// destroys a test sandbox) and the process driver otherwise, and says why.
func selectDriver(ctx context.Context, cfg config.Config, log *slog.Logger) (driver.Driver, string, error) {
	agent, err := findAgent(cfg.AgentPath)
	if err != nil {
		return nil, "", err
	}
	if cfg.Driver != "auto" {
		d, err := build(cfg.Driver, cfg, agent, log)
		return d, "chosen by configuration", err
	}
	start := time.Now()
	d, err := build(namespace.Name, cfg, agent, log)
	if err == nil {
		if err = d.(prober).Probe(ctx); err == nil {
			return d, fmt.Sprintf("auto: the namespace driver created, used and destroyed a test sandbox in %d ms", time.Since(start).Milliseconds()), nil
		}
		if c, ok := d.(interface{ Close() error }); ok {
			c.Close()
		}
	}
	why := fmt.Sprintf("auto: the namespace driver cannot run here (%v), so sandboxes fall back to the DEGRADED process driver", err)
	log.Warn("namespace driver unavailable; using the process driver", "err", err)
	d, err = build(process.Name, cfg, agent, log)
	return d, why, err
}

func build(name string, cfg config.Config, agent string, log *slog.Logger) (driver.Driver, error) {
	f, ok := factories[name]
	if !ok {
		return nil, fmt.Errorf("unknown driver %q", name)
	}
	d, err := f(cfg, agent, log)
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", name, err)
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
