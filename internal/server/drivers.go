package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/hutchdev/hutch/internal/config"
	"github.com/hutchdev/hutch/internal/driver"
	"github.com/hutchdev/hutch/internal/driver/process"
)

// factories is the driver registry: every driver this build can run.
var factories = map[string]func(cfg config.Config, agent string, log *slog.Logger) (driver.Driver, error){
	process.Name: func(cfg config.Config, agent string, log *slog.Logger) (driver.Driver, error) {
		return process.New(process.Config{Dir: filepath.Join(cfg.DataDir, "sandboxes", "process"), AgentPath: agent, WarmPool: cfg.WarmPool, Log: log})
	},
}

// selectDriver builds the configured driver; "auto" picks the strongest
// one this host can run and says why.
func selectDriver(cfg config.Config, log *slog.Logger) (driver.Driver, string, error) {
	agent, err := findAgent(cfg.AgentPath)
	if err != nil {
		return nil, "", err
	}
	name, why := cfg.Driver, "chosen by configuration"
	if name == "auto" {
		name, why = process.Name, "auto: the process driver is the only one in this build"
	}
	f, ok := factories[name]
	if !ok {
		return nil, "", fmt.Errorf("unknown driver %q", name)
	}
	d, err := f(cfg, agent, log)
	if err != nil {
		return nil, "", fmt.Errorf("driver %s: %w", name, err)
	}
	return d, why, nil
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
