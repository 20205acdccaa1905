package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/server/config"
)

// settleDelay is how long the density test waits before reading memory, so
// the warm pool has refilled and nothing is half-started: the readings
// before and after then differ by the sandboxes alone.
const settleDelay = time.Second

// fillTimeoutS is the lifetime of the sandboxes -alive keeps, the most a
// server allows by default: filling a box with thousands takes longer
// than the default hour, which would destroy the first ones meanwhile.
const fillTimeoutS = 24 * 60 * 60

// aliveResult is what keeping n sandboxes alive at once cost.
type aliveResult struct {
	n, created, execOK int
	createErr, execErr string // the first failure of each, if any

	create, exec, destroy []time.Duration
	createAll, destroyAll time.Duration // createAll leaves the probes out

	probeEvery, probeSamples int
	fleet                    []checkpoint // the probes as the fleet grew; none unless probed

	before, after memSnapshot    // idle
	idle          idleCPU        // with -idle: what the full fleet used, idle
	restart       *restartResult // with -restart: the server restarted with the fleet full
	cgroup        string         // path of this process's memory cgroup; "" if none
}

// memSnapshot is one reading of memory while the sandboxes are idle.
type memSnapshot struct {
	procs  procMem // the sandboxes' processes
	avail  int64   // host MemAvailable, bytes
	cgroup int64   // usage of this process's memory cgroup, bytes
	// sandboxes is the usage of the sandboxes' own cgroups (the namespace
	// driver's), bytes; -1 when they have none.
	sandboxes int64
	// self is this process's VmRSS and heap its Go heap and stacks in
	// use, bytes: the server's own memory (the bench's client is small).
	self, heap int64
}

// measureAlive creates n sandboxes back to back and keeps them all alive;
// reads their memory once idle; execs `true` once in each; then destroys
// them all; with idle, it first leaves them idle that long and reads the
// CPU they and the server use. Failed creates are counted, not fatal.
// Whatever it created is destroyed even when it fails part-way.
// With probe.every set, it times calls of each of probeOps at 0 alive,
// after every probe.every sandboxes created, and at the end, the fill
// paused meanwhile.
// full, when set, is given the result so far once the fleet is full and
// its memory read, before the execs and destroys of a long run.
// With restart set, it then restarts the server (measureRestart) and goes
// on with the new one's client.
// profile, when set, is called as each phase begins and returns what ends
// its profile.
func measureAlive(ctx context.Context, c *client.Client, n int, agentPath string, probe probeOptions, idle time.Duration, restart restarter,
	full func(aliveResult), profile func(phase string) (stop func())) (res aliveResult, retErr error) {
	if profile == nil {
		profile = func(string) func() { return func() {} }
	}
	res.n, res.probeEvery, res.probeSamples = n, probe.every, probe.samples
	var ids []string
	defer func() {
		if retErr != nil {
			destroyAll(ctx, c, ids)
		}
	}()

	// One sandbox made and destroyed first starts what a driver starts on
	// first use (the process driver's warm pool), so the baseline has it.
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return res, fmt.Errorf("warm-up create: %w", err)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		return res, fmt.Errorf("warm-up destroy: %w", err)
	}
	// Before the memory is read, so its sandbox counts on both sides, and
	// before the reading returns the server's memory to the kernel, which
	// the first calls after it fault back in.
	var fleet *prober
	if probe.every > 0 {
		if fleet, err = startProber(ctx, c, probe); err != nil {
			return res, err
		}
		defer fleet.close(ctx)
		res.fleet = append(res.fleet, fleet.measure(ctx, 0))
	}

	cg, hasCg := ownMemCgroup(os.Getpid())
	var pcg *memCgroup
	if hasCg {
		res.cgroup, pcg = cg.path, &cg
	}
	if res.before, err = idleMemory(agentPath, pcg); err != nil {
		return res, err
	}
	start := time.Now()
	stop := profile("create")
	tk := startTicker(os.Stderr, "create", n)
	var probing time.Duration
	probeFleet := func() {
		t := time.Now()
		tk.hold(func() { res.fleet = append(res.fleet, fleet.measure(ctx, len(ids))) })
		probing += time.Since(t)
	}
	for i := 0; i < n; i++ {
		t := time.Now()
		var sb *api.Sandbox
		err := tk.call(func() (err error) {
			sb, err = c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: fillTimeoutS})
			return err
		})
		if ctx.Err() != nil {
			tk.finish()
			return res, ctx.Err()
		}
		if err != nil {
			if res.createErr == "" {
				res.createErr = fmt.Sprintf("create %d: %s", i, err)
			}
			continue
		}
		res.create = append(res.create, time.Since(t))
		ids = append(ids, sb.ID)
		if fleet != nil && len(ids)%probe.every == 0 {
			probeFleet()
		}
	}
	if fleet != nil && len(ids)%probe.every != 0 {
		probeFleet()
	}
	tk.finish()
	stop()
	res.createAll = time.Since(start) - probing
	res.created = len(ids)
	if idle > 0 {
		progress(fmt.Sprintf("leaving the %d sandboxes idle for %s", len(ids), idle))
		stop := profile("idle")
		res.idle = measureIdleCPU(config.Default().CgroupParent, ids, idle)
		stop()
	}
	// After -idle when given: what the fleet keeps, not what its last
	// creates still had in flight.
	if res.after, err = idleMemory(agentPath, pcg); err != nil {
		return res, err
	}
	if full != nil {
		full(res)
	}

	if restart != nil {
		progress(fmt.Sprintf("restarting the server with %d sandboxes alive", len(ids)))
		stop := profile("restart")
		r, nc, err := measureRestart(ctx, restart, ids)
		stop()
		res.restart = &r
		if nc != nil {
			c = nc
		}
		if err != nil {
			return res, err
		}
	}

	trueCmd := api.ExecRequest{Cmd: []string{"true"}}
	stop = profile("exec")
	tk = startTicker(os.Stderr, "exec", len(ids))
	for _, id := range ids {
		t := time.Now()
		err := tk.call(func() error {
			r, err := c.Exec(ctx, id, trueCmd)
			if err == nil && r.ExitCode != 0 {
				err = fmt.Errorf("true exited %d", r.ExitCode)
			}
			return err
		})
		if ctx.Err() != nil {
			tk.finish()
			return res, ctx.Err()
		}
		if err != nil {
			if res.execErr == "" {
				res.execErr = fmt.Sprintf("exec in %s: %s", id, err)
			}
			continue
		}
		res.exec = append(res.exec, time.Since(t))
		res.execOK++
	}
	tk.finish()
	stop()

	start = time.Now()
	defer profile("destroy")()
	tk = startTicker(os.Stderr, "destroy", len(ids))
	defer tk.finish()
	for len(ids) > 0 {
		t := time.Now()
		if err := tk.call(func() error { return c.DeleteSandbox(ctx, ids[0]) }); err != nil {
			return res, fmt.Errorf("destroy %s: %w", ids[0], err)
		}
		res.destroy = append(res.destroy, time.Since(t))
		ids = ids[1:]
	}
	res.destroyAll = time.Since(start)
	return res, nil
}

// idleMemory lets the server settle, returns what this process holds to
// the kernel, and reads the sandbox processes' memory, MemAvailable and,
// when cg is set, the usage of cg.
func idleMemory(agentPath string, cg *memCgroup) (s memSnapshot, err error) {
	time.Sleep(settleDelay)
	runtime.GC()
	debug.FreeOSMemory()
	var holds func(int) bool
	if cg != nil {
		holds = cg.holds
	}
	if s.procs, err = sandboxMem(agentPath, holds); err != nil {
		return s, err
	}
	if s.avail, err = memAvailable(); err != nil {
		return s, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heap = int64(ms.HeapInuse + ms.StackInuse)
	if s.self, err = procField("/proc/self/status", "VmRSS:"); err != nil {
		return s, err
	}
	s.sandboxes = -1
	if n, ok := sandboxCgroupsMem(config.Default().CgroupParent); ok {
		s.sandboxes = n
	}
	if cg != nil {
		s.cgroup, err = cg.read()
	}
	return s, err
}
