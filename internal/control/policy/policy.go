// Package policy holds the lifecycle policies of the sandboxes this
// server runs: expiry (expiry.go), idle and memory pressure (idle.go,
// memory.go), out-of-memory kills (oom.go), disk (disk.go), lost agents
// (agentcheck.go), and the metric samples and the sweep of orphans. Each
// acts only through the sandbox service's exported API: the service keeps
// the state of sandboxes and does what a policy asks under each
// sandbox's lock, rechecking the state; a policy decides when to ask, and
// keeps only what it must remember between ticks, renewed every tick from
// the sandboxes it still sees, so nothing it keeps outlives a sandbox.
//
// Lifecycle: New (no side effects), then Run until its context ends; Run
// returns once every goroutine it started has.
package policy

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/sandbox"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/store"
)

// Config is what the policies need besides the service.
type Config struct {
	// Tick is how often the policies look at the sandboxes; SweepEvery
	// how often orphans are swept.
	Tick, SweepEvery time.Duration
	// HostMemory reads the host's memory for the memory policy; nil reads
	// /proc/meminfo (hostinfo.Memory).
	HostMemory HostMemory
	Log        *slog.Logger
}

// Runner runs every policy.
type Runner struct {
	svc *sandbox.Service
	cfg Config
	log *slog.Logger

	fleet  fleet
	expiry expiry
	idle   idle
	disk   disk
}

// New returns the policies of svc.
func New(svc *sandbox.Service, cfg Config) *Runner {
	if cfg.HostMemory == nil {
		cfg.HostMemory = hostinfo.Memory
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	r := &Runner{svc: svc, cfg: cfg, log: cfg.Log}
	r.fleet = fleet{svc: svc}
	r.expiry = expiry{svc: svc, log: cfg.Log}
	r.idle = idle{svc: svc, log: cfg.Log, memory: cfg.HostMemory}
	r.disk = disk{svc: svc, log: cfg.Log}
	return r
}

// Run runs the policies until ctx ends: each tick, expiry, idle and
// memory, out-of-memory kills, disk and the metric samples, in turn;
// every SweepEvery the sweep; and the agent check whenever the service
// reports a lost agent.
func (r *Runner) Run(ctx context.Context) {
	ctx = tenancy.System(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { checkAgents(ctx, r.svc) })
	t := time.NewTicker(r.cfg.Tick)
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.Tick(ctx, now)
			if now.Sub(lastSweep) >= r.cfg.SweepEvery {
				lastSweep = now
				if err := r.svc.Sweep(ctx); err != nil {
					r.log.Warn("sweep", "err", err)
				}
			}
		}
	}
}

// Tick runs the ticking policies once, as of now, over the fleet brought
// up to date (fleet.go). The out-of-memory watch and the metric samples,
// which read every sandbox's cgroups, run once per sample period (which
// grows with the fleet: sandbox.SampleDue), not every tick.
func (r *Runner) Tick(ctx context.Context, now time.Time) {
	if err := r.fleet.refresh(ctx, now); err != nil {
		r.log.Warn("list sandboxes for the policies", "err", err)
		return
	}
	running, paused, stopped := r.fleet.byState()
	r.expiry.tick(ctx, now, append(slices.Clip(running), stopped...))
	r.idle.tick(ctx, now, running, paused)
	r.disk.tick(ctx, now, running)
	if r.svc.SampleDue(now, len(running)+len(paused)) {
		watchOOM(ctx, r.svc, running)
		r.svc.SampleMetrics(ctx, now, append(slices.Clip(running), paused...))
	}
}

// byState splits recs into the running, paused and stopped ones, each in
// recs' order (oldest first, by id).
func byState(recs []*store.Sandbox) (running, paused, stopped []*store.Sandbox) {
	for _, rec := range recs {
		switch rec.State {
		case api.StateRunning:
			running = append(running, rec)
		case api.StatePaused:
			paused = append(paused, rec)
		case api.StateStopped:
			stopped = append(stopped, rec)
		}
	}
	return running, paused, stopped
}
