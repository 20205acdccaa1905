package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/driver"
	"github.com/hutchdev/hutch/internal/runtime/driver/process"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/testutil"
)

// brokenDriver is a registered driver whose Open fails with err.
type brokenDriver struct {
	driver.Driver
	err    error
	closed bool
}

func (b *brokenDriver) Name() string                   { return "namespace" }
func (b *brokenDriver) Open(ctx context.Context) error { return b.err }
func (b *brokenDriver) Close() error                   { b.closed = true; return nil }

// TestAuto: auto falls back to the real process driver only when the host
// cannot run the preferred one, and says why; a fixable cause stops the
// start with the cause.
func TestAuto(t *testing.T) {
	bin, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	procReg, ok := driver.Lookup(process.Name)
	if !ok {
		t.Fatal("the process driver is not registered")
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name     string
		err      error
		fallBack bool
	}{
		{"host cannot", fmt.Errorf("this kernel has no user namespaces: %w", driver.ErrHostUnsupported), true},
		{"fixable", errors.New("agent /home/x/hutch-agent is not executable: chmod o+rx it"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := &brokenDriver{err: tc.err}
			regs := []driver.Registration{
				{Name: "namespace", Auto: 1, Factory: func(driver.Options) (driver.Driver, error) { return broken, nil }},
				procReg,
			}
			cfg := config.Default()
			cfg.DataDir = testutil.DataDir(t)
			cfg.AgentPath = filepath.Join(bin, "hutch-agent")
			cfg.WarmPool = 0
			set, why, closeAll, err := loadDrivers(context.Background(), cfg, "test-node", regs, nil, log)
			t.Cleanup(closeAll)
			if !broken.closed {
				t.Error("the driver that failed to open was not closed")
			}
			if !tc.fallBack {
				if err == nil || !strings.Contains(err.Error(), "chmod o+rx") {
					t.Fatalf("auto with a fixable failure: err = %v; want the cause and no fallback", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set.Default().Name() != process.Name || !strings.Contains(why, "no user namespaces") || !strings.Contains(why, "DEGRADED") {
				t.Fatalf("auto chose %s because %q; want the process driver and the reason", set.Default().Name(), why)
			}
			if _, ok := set.Missing()["namespace"]; !ok {
				t.Fatalf("the driver that failed is not named as missing: %v", set.Missing())
			}
		})
	}
}

// TestOnlyDrivers: with --drivers only the drivers named are opened; the
// others are neither opened nor listed as missing, and a create cannot
// name them.
func TestOnlyDrivers(t *testing.T) {
	bin, err := testutil.Build("cmd/hutch-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	procReg, _ := driver.Lookup(process.Name)
	other := &brokenDriver{err: errors.New("opened though --drivers leaves it out")}
	regs := []driver.Registration{
		{Name: "namespace", Auto: 1, Factory: func(driver.Options) (driver.Driver, error) { return other, nil }},
		procReg,
	}
	cfg := config.Default()
	cfg.DataDir = testutil.DataDir(t)
	cfg.AgentPath = filepath.Join(bin, "hutch-agent")
	cfg.WarmPool = 0
	cfg.Drivers = []string{process.Name}
	set, _, closeAll, err := loadDrivers(context.Background(), cfg, "test-node", regs, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	if other.closed || len(set.Missing()) != 0 || set.Names() != process.Name || set.Default().Name() != process.Name {
		t.Errorf("with --drivers process: opened %v, missing %v, default %s; want only process", set.Names(), set.Missing(), set.Default().Name())
	}
	cfg.Driver = "namespace"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "not among --drivers") {
		t.Errorf("--driver namespace --drivers process: %v; want it refused", err)
	}
}
