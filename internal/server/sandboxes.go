package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/control/policy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/edge/egress"
	"github.com/hutchdev/hutch/internal/edge/gateway"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/server/config"
)

// Lifecycle loop periods.
const (
	reapEvery  = time.Second
	sweepEvery = time.Minute
)

// openSandboxes builds the sandbox service, the one door to every
// sandbox, on the drivers, the store and the parts sandboxes meet.
func (s *Server) openSandboxes(_ context.Context, p *parts) error {
	// A nil *Service must not become a non-nil interface.
	var tmpls sandbox.Templates
	if p.templates != nil {
		tmpls = p.templates
	}
	var vols sandbox.Volumes
	if p.volumes != nil {
		vols = p.volumes
	}
	capacity, err := hostCapacity(s.cfg, s.log)
	if err != nil {
		return err
	}
	cfg := s.cfg
	p.sandboxes, err = sandbox.New(sandbox.Config{
		Store:              p.store,
		Drivers:            p.drivers,
		Events:             p.events,
		Gateway:            p.gateway,
		Log:                s.log,
		Node:               p.node,
		DefaultTemplate:    cfg.DefaultTemplate,
		Templates:          tmpls,
		Volumes:            vols,
		SnapshotDir:        snapshotDir(cfg),
		DefaultLimits:      cfg.DefaultLimits,
		MaxLimits:          cfg.MaxLimits,
		Settings:           cfg.Settings(),
		MaxFileBytes:       cfg.MaxFileBytes,
		MaxTarBytes:        cfg.MaxTarBytes,
		MaxOutputBytes:     cfg.MaxOutputBytes,
		MaxCallsPerSandbox: cfg.MaxCallsPerSandbox,
		TeardownTimeout:    cfg.TeardownTimeout,
		AgentHungAfter:     cfg.AgentHungAfter,
		Egress: &egress.Proxies{Config: &egress.Config{AllowPrivate: cfg.EgressAllowPrivate, Observer: p.metrics, Log: s.log,
			Local: p.gateway.ForSandbox, LocalPrefix: gateway.Prefix}},
		Observer: p.metrics,
		Disk:     p.disk,
		Sealer:   p.sealer,
		Capacity: capacity,
		Quotas:   p.quotas,
	})
	return err
}

// runSandboxes re-attaches to the sandboxes a previous start left running
// and starts the lifecycle loops: the policies (expiry, idle and memory,
// OOM, disk, lost agents, metrics, sweep), each node's over its own
// sandboxes. The event log's trim is the fleet's (openNodes).
func (s *Server) runSandboxes(ctx context.Context, p *parts) error {
	svc := p.sandboxes
	if err := svc.Recover(ctx); err != nil {
		s.log.Warn("recovery was incomplete", "err", err)
	}
	s.onClose("process watchers", func(context.Context) error { svc.Close(); return nil })
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	policies := policy.New(svc, policy.Config{Tick: reapEvery, SweepEvery: sweepEvery, Log: s.log})
	wg.Go(func() { policies.Run(loops) })
	s.onClose("lifecycle loops", func(context.Context) error { stopLoops(); wg.Wait(); return nil })
	return nil
}

// hostCapacity is what this host may promise its sandboxes together,
// from its memory, pid_max, threads-max and CPUs (hostinfo) and the
// reserves and overcommit factors of cfg.
func hostCapacity(cfg config.Config, log *slog.Logger) (sandbox.Capacity, error) {
	facts, err := hostinfo.Read()
	if err != nil {
		return sandbox.Capacity{}, fmt.Errorf("host capacity: %w", err)
	}
	c := sandbox.HostCapacity(facts, sandbox.HostLimits{
		ReserveMemoryMB:  cfg.ReserveMemoryMB,
		ReservePids:      cfg.ReservePids,
		MemoryOvercommit: cfg.MaxMemoryOvercommit,
		PidsOvercommit:   cfg.MaxPidsOvercommit,
		CPUOvercommit:    cfg.MaxCPUOvercommit,
	})
	log.Info("host capacity for sandboxes (0: no bound)", "memory_mb", c.MemoryMB, "cpu", c.CPU, "pids", c.Pids,
		"host.memory_mb", facts.MemoryMB, "host.pid_max", facts.PidMax, "host.threads_max", facts.ThreadsMax, "host.cpus", facts.CPUs,
		"tenant.default_quotas", fmt.Sprintf("%+v", cfg.TenantQuotas))
	return c, nil
}
