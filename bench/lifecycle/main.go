// Command lifecycle measures the sandbox life cycle through the whole stack
// (HTTP API, store, driver, agent) in one run, beside floors measured in
// the same run: plain fork/exec of `true`, and `true` run by bwrap and by
// runc in sandboxes comparable to hutch's (see floors.go; bash
// bench/setup.sh installs both). It reports create → first exec returns,
// exec round trip and destroy as p50 and p95 over many sandboxes, with
// their ratios to each floor; then keeps -alive sandboxes alive at once and
// reports the memory each idle one costs, and with -probe-every what calls
// cost as they are created (probe.go), drawn in an SVG chart with -chart;
// and, with -creates, the rate of creates from -clients clients at once.
// It starts its own hutch server on loopback with a temporary data
// directory.
//
//	go build -o bin/ ./cmd/... ./bench/... && sudo bin/lifecycle -agent bin/hutch-agent
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/bench/internal/stat"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/server/config"
)

// options are the command's flags.
type options struct {
	n, execs, warm int
	gap            time.Duration
	agent, driver  string
	floors         bool   // time bwrap and runc beside fork/exec
	floorRuns      int    // runs of each of bwrap and runc
	alive          int    // sandboxes to keep alive at once; 0 skips
	probeEvery     int    // with alive: probe the calls' cost every this many created; 0 never
	probeSamples   int    // calls of each operation a probe times
	chart          string // with probeEvery: the SVG chart of the probes, written here
	clients        int    // concurrent clients of -creates
	creates        int    // sandboxes to create from clients at once; 0 skips
	cpuprofile     string
	profilePhase   string        // with cpuprofile: profile only this phase of -alive
	memprofile     string        // heap profile of the server with the fleet of -alive full
	idle           time.Duration // with -alive: how long the full fleet is left idle, its CPU read
	restart        bool          // with -alive: restart the server with the fleet full, timed
	serverLog      string        // file for the server's warnings and errors; "" discards them
	store          string        // the server's store: sqlite, or postgres on a throwaway cluster
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 200, "sandboxes to create one by one for the life-cycle timings (0: skip)")
	flag.DurationVar(&o.gap, "gap", 0, "idle time between creates (0: back to back)")
	flag.IntVar(&o.execs, "execs", 1000, "exec round trips (and fork/execs of the floor) to time")
	flag.StringVar(&o.agent, "agent", "", "path of hutch-agent (default: beside this binary)")
	flag.StringVar(&o.driver, "driver", "auto", "driver to measure: auto, process, or namespace once it is built in")
	flag.IntVar(&o.warm, "warm-pool", config.Default().WarmPool, "warm agents the driver keeps")
	flag.BoolVar(&o.floors, "floors", true, "also time bwrap and runc running `true` as floors")
	flag.IntVar(&o.floorRuns, "floor-runs", 0, "runs of each of bwrap and runc (0: as many as -n, or 200)")
	flag.IntVar(&o.alive, "alive", 200, "sandboxes to keep alive at once for the memory figures (0: skip)")
	flag.IntVar(&o.probeEvery, "probe-every", 0, "with -alive, time create, exec, file write, preview request and list at 0 alive and every this many created, the fill paused meanwhile (0: never)")
	flag.IntVar(&o.probeSamples, "probe-samples", 20, "calls of each operation one probe times")
	flag.StringVar(&o.chart, "chart", "", "with -probe-every, write an SVG chart of each operation's p50 against sandboxes alive to this file")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of this process (the server, in process) after the floors to this file")
	flag.StringVar(&o.profilePhase, "profile-phase", "", "with -cpuprofile, profile only this phase: create, idle (with -idle), exec or destroy of -alive, or concurrent (the creates of -creates)")
	flag.DurationVar(&o.idle, "idle", 0, "with -alive, leave the full fleet idle this long and report the CPU it and the server use (0: skip)")
	flag.BoolVar(&o.restart, "restart", false, "with -alive, once the fleet is full, stop the server as on SIGTERM (sandboxes keep running), start a new one on the same data directory and time until it serves the API and until every sandbox answers an exec")
	flag.StringVar(&o.memprofile, "memprofile", "", "with -alive, write a heap profile of this process (the server, in process) to this file once every sandbox is created")
	flag.IntVar(&o.clients, "clients", 8, "clients creating sandboxes at once for -creates")
	flag.IntVar(&o.creates, "creates", 0, "sandboxes to create from -clients clients at once, each followed by its first exec and kept alive until all are made (0: skip)")
	flag.StringVar(&o.serverLog, "server-log", "", "append the server's warnings and errors to this file")
	flag.StringVar(&o.store, "store", "sqlite", "the server's store: sqlite (in its data directory), or postgres (a throwaway cluster from Debian's postgresql, started here with its durable defaults)")
	flag.Parse()
	if o.probeEvery < 0 || o.probeEvery > 0 && o.probeSamples < 1 || o.chart != "" && o.probeEvery == 0 {
		fmt.Fprintln(os.Stderr, "lifecycle: -probe-every must be 0 or more, -probe-samples at least 1 with it, and -chart needs it")
		os.Exit(2)
	}
	if o.restart && (o.alive == 0 || o.probeEvery > 0) {
		// The prober keeps a client of the first server.
		fmt.Fprintln(os.Stderr, "lifecycle: -restart needs -alive and does not go with -probe-every")
		os.Exit(2)
	}
	if o.store != "sqlite" && o.store != "postgres" {
		fmt.Fprintln(os.Stderr, "lifecycle: -store is sqlite or postgres")
		os.Exit(2)
	}
	if o.memprofile != "" {
		runtime.MemProfileRate = 4 << 10 // every allocation of a sandbox's few KiB counted
	}
	if o.floorRuns == 0 {
		o.floorRuns = o.n
		if o.floorRuns == 0 {
			o.floorRuns = 200
		}
	}
	// Before anything starts: ^C ends the run with its sandboxes destroyed
	// and the server shut down, and so does a reader that closes stdout
	// early (| head), which would otherwise kill the process mid-print.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	// Before the server starts, so its warm pool filling does not slow them.
	progress("timing the floors")
	fl, err := measureFloors(o.floorRuns, o.execs, o.floors)
	if err != nil {
		return err
	}
	if o.cpuprofile != "" && o.profilePhase == "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	var log *slog.Logger
	if o.serverLog != "" {
		f, err := os.OpenFile(o.serverLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	storeURL, stopStore, err := startStore(o.store)
	if err != nil {
		return err
	}
	defer stopStore()
	bs, err := benchserver.StartIn(ctx, "", log, func(cfg *config.Config) {
		cfg.Store, cfg.StoreURL = o.store, storeURL
		cfg.AgentPath = o.agent
		cfg.Driver = o.driver
		cfg.WarmPool = o.warm
		// The host's admission at its defaults, which the fleet of -alive
		// must fit in (the benchmark server lifts it); the tenant's quota
		// of sandboxes (100 by default, an operator's setting per tenant)
		// stays lifted.
		d := config.Default()
		cfg.MaxMemoryOvercommit, cfg.MaxPidsOvercommit, cfg.MaxCPUOvercommit = d.MaxMemoryOvercommit, d.MaxPidsOvercommit, d.MaxCPUOvercommit
	})
	if err != nil {
		return err
	}
	defer bs.Stop(ctx)
	c := bs.Client
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}

	fmt.Printf("hutch lifecycle benchmark — driver %s (%s), store %s, warm pool %d, gap %s between creates, %d CPUs, %s, %s\n\n",
		info.Driver, info.Isolation, o.store, o.warm, o.gap, runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	printFloors(fl)
	if o.n > 0 {
		progress(fmt.Sprintf("creating %d sandboxes one by one", o.n))
		lc, err := measureLifecycle(ctx, c, o)
		if err != nil {
			return err
		}
		printLifecycle(lc, fl)
	}
	if o.creates > 0 {
		rf := rateFloor{clients: o.clients, skipped: "not asked for (-floors=false)"}
		if o.floors {
			progress(fmt.Sprintf("running bwrap %d times from %d clients at once", o.creates, o.clients))
			rf = measureRateFloor(o.clients, o.creates)
		}
		progress(fmt.Sprintf("creating %d sandboxes from %d clients at once", o.creates, o.clients))
		res, err := measureConcurrent(ctx, c, o.clients, o.creates, phaseProfiler(o))
		if err != nil {
			return err
		}
		printConcurrent(res, fl, rf)
	}
	if o.alive > 0 {
		progress(fmt.Sprintf("keeping %d sandboxes alive at once", o.alive))
		probe := probeOptions{every: o.probeEvery, samples: o.probeSamples, addr: bs.Addr(), key: bs.Key}
		var restart restarter
		if o.restart {
			restart = func(ctx context.Context) (time.Time, *client.Client, error) {
				started, err := bs.Restart(ctx)
				return started, bs.Client, err
			}
		}
		// The probes' table and chart are printed as soon as the fleet is
		// full: the execs and destroys of thousands take many minutes more.
		var chartErr error
		full := func(res aliveResult) {
			if len(res.fleet) == 0 {
				return
			}
			printFleet(res)
			if o.chart != "" {
				title := fmt.Sprintf("p50 of %d calls each against sandboxes alive: driver %s, %d CPUs, %s",
					o.probeSamples, info.Driver, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
				chartErr = writeFleetChart(o.chart, title, res.fleet)
			}
		}
		res, err := measureAlive(ctx, c, o.alive, o.agent, probe, o.idle, restart, full, phaseProfiler(o))
		if err != nil {
			return errors.Join(err, chartErr)
		}
		printAlive(res)
		return chartErr
	}
	return nil
}

// lifecycle holds the timings of the life-cycle part.
type lifecycle struct {
	createOnly, createExec, roundTrip, destroy []time.Duration
}

// measureLifecycle creates o.n sandboxes one by one, each followed by its
// first exec; times o.execs exec round trips in the first; then destroys
// them one by one. What it created is destroyed even when it fails.
func measureLifecycle(ctx context.Context, c *client.Client, o options) (lc lifecycle, retErr error) {
	trueCmd := api.ExecRequest{Cmd: []string{"true"}}
	var ids []string
	defer func() {
		if retErr != nil {
			destroyAll(ctx, c, ids)
		}
	}()
	for i := 0; i < o.n; i++ {
		time.Sleep(o.gap)
		start := time.Now()
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			return lc, fmt.Errorf("create %d: %w", i, err)
		}
		ids = append(ids, sb.ID)
		lc.createOnly = append(lc.createOnly, time.Since(start))
		if _, err := c.Exec(ctx, sb.ID, trueCmd); err != nil {
			return lc, fmt.Errorf("first exec %d: %w", i, err)
		}
		lc.createExec = append(lc.createExec, time.Since(start))
	}
	var err error
	lc.roundTrip, err = timeN(o.execs, func() error {
		res, err := c.Exec(ctx, ids[0], trueCmd)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("true exited %d", res.ExitCode)
		}
		return err
	})
	if err != nil {
		return lc, err
	}
	for len(ids) > 0 {
		start := time.Now()
		if err := c.DeleteSandbox(ctx, ids[0]); err != nil {
			return lc, fmt.Errorf("destroy %s: %w", ids[0], err)
		}
		lc.destroy = append(lc.destroy, time.Since(start))
		ids = ids[1:]
	}
	return lc, nil
}

// progress tells, on stderr, what the benchmark is doing now.
func progress(what string) { fmt.Fprintln(os.Stderr, "lifecycle:", what, "…") }

func timeN(n int, fn func() error) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := fn(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// pct and ms are stat's, by their short names here.
var (
	pct = stat.Pct
	ms  = stat.MS
)

// destroyAll destroys ids on a context of its own: what a failed or
// interrupted measurement created goes even so.
func destroyAll(ctx context.Context, c *client.Client, ids []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, id := range ids {
		_ = c.DeleteSandbox(ctx, id)
	}
}

// phaseProfiler returns what starts the profiles of one phase of -alive
// and returns what stops them: the CPU profile of -profile-phase, and the
// heap profile of -memprofile as the exec phase begins (the fleet full and
// idle); nil when there is neither.
func phaseProfiler(o options) func(phase string) (stop func()) {
	cpu := o.cpuprofile != "" && o.profilePhase != ""
	if !cpu && o.memprofile == "" {
		return nil
	}
	return func(phase string) func() {
		if phase == "exec" && o.memprofile != "" {
			writeHeapProfile(o.memprofile)
		}
		if !cpu || phase != o.profilePhase {
			return func() {}
		}
		f, err := os.Create(o.cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lifecycle: profile:", err)
			return func() {}
		}
		return func() {
			pprof.StopCPUProfile()
			f.Close()
		}
	}
}

// writeHeapProfile writes this process's heap profile, after a collection,
// to path, and its goroutines (what holds the stacks) to path.goroutines.
func writeHeapProfile(path string) {
	runtime.GC()
	for name, p := range map[string]string{"heap": path, "goroutine": path + ".goroutines"} {
		f, err := os.Create(p)
		if err == nil {
			err = pprof.Lookup(name).WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "lifecycle: %s profile: %v\n", name, err)
		}
	}
}
