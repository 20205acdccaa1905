// Command lifecycle measures the sandbox life cycle through the whole stack
// (HTTP API, store, driver, agent) in one run, beside plain fork/exec of
// `true` as the floor: create → first exec returns, exec round trip, and
// destroy, as p50 and p95 over many sandboxes. It starts its own hutch
// server on loopback with a temporary data directory.
//
//	go build -o bin/ ./cmd/... ./bench/... && sudo bin/lifecycle -agent bin/hutch-agent
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/config"
	"github.com/hutchdev/hutch/internal/server"
)

func main() {
	n := flag.Int("n", 200, "sandboxes to create")
	gap := flag.Duration("gap", 0, "idle time between creates (0: back to back)")
	execs := flag.Int("execs", 1000, "exec round trips to time")
	agent := flag.String("agent", "", "path of hutch-agent (default: beside this binary)")
	driver := flag.String("driver", "auto", "driver to measure")
	warm := flag.Int("warm-pool", config.Default().WarmPool, "warm agents the driver keeps")
	flag.Parse()
	if err := run(*n, *execs, *warm, *gap, *agent, *driver); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle:", err)
		os.Exit(1)
	}
}

func run(n, execs, warm int, gap time.Duration, agent, drv string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hutch-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.AgentPath = agent
	cfg.Driver = drv
	cfg.WarmPool = warm
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.Start(ctx, cfg, log, "bench")
	if err != nil {
		return err
	}
	defer srv.Shutdown(ctx)
	key, err := os.ReadFile(srv.AdminKeyPath)
	if err != nil {
		return err
	}
	c := client.New("http://"+srv.Addr().String(), strings.TrimSpace(string(key)))
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}

	floor, err := timeN(execs, func() error { return exec.Command("/bin/true").Run() })
	if err != nil {
		return err
	}

	trueCmd := api.ExecRequest{Cmd: []string{"true"}}
	var createOnly, createExec, destroy []time.Duration
	var ids []string
	for i := 0; i < n; i++ {
		time.Sleep(gap)
		start := time.Now()
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			return fmt.Errorf("create %d: %w", i, err)
		}
		createOnly = append(createOnly, time.Since(start))
		if _, err := c.Exec(ctx, sb.ID, trueCmd); err != nil {
			return fmt.Errorf("first exec %d: %w", i, err)
		}
		createExec = append(createExec, time.Since(start))
		ids = append(ids, sb.ID)
	}
	roundTrip, err := timeN(execs, func() error {
		res, err := c.Exec(ctx, ids[0], trueCmd)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("true exited %d", res.ExitCode)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		start := time.Now()
		if err := c.DeleteSandbox(ctx, id); err != nil {
			return fmt.Errorf("destroy %s: %w", id, err)
		}
		destroy = append(destroy, time.Since(start))
	}

	fmt.Printf("hutch lifecycle benchmark — driver %s (%s), warm pool %d, gap %s between creates, %d CPUs, %s, %s\n\n",
		info.Driver, info.Isolation, cfg.WarmPool, gap, runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	fmt.Println("| what | n | p50 | p95 | p50 / floor |")
	fmt.Println("|---|---|---|---|---|")
	f := pct(floor, 50)
	row := func(name string, d []time.Duration) {
		fmt.Printf("| %s | %d | %s | %s | %.1f× |\n", name, len(d), ms(pct(d, 50)), ms(pct(d, 95)), float64(pct(d, 50))/float64(f))
	}
	row("fork/exec `true` (floor)", floor)
	row("create (API answers 201)", createOnly)
	row("create → first exec returns", createExec)
	row("exec round trip (`true`)", roundTrip)
	row("destroy", destroy)
	return nil
}

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

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
