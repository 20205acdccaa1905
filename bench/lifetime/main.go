// Command lifetime measures pausing and resuming sandboxes through the
// whole stack, in one run: the latency of pause and resume calls on a
// sandbox that is busy, the latency a paused sandbox's first preview
// request adds (it is resumed on the way), and how many idle sandboxes
// this host holds at once, running and then paused, with the memory each
// takes. It starts its own hutch server on loopback, in this process.
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/... ./bench/... && bin/lifetime -agent bin/hutch-agent
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/bench/internal/stat"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/runtime/host/hostinfo"
	"github.com/hutchdev/hutch/internal/server/config"
)

// appPort is where the preview part's web server listens in its sandbox.
const appPort = 8000

func main() {
	agent := flag.String("agent", "", "path of hutch-agent (default: beside this binary)")
	cycles := flag.Int("n", 200, "pause and resume cycles")
	previews := flag.Int("previews", 50, "preview requests, warm and first after a pause, each")
	fleet := flag.Int("fleet", 1000, "idle sandboxes to keep at once (0: skip)")
	workers := flag.Int("workers", 2, "sandboxes created, paused and destroyed at once in the fleet part")
	flag.Parse()
	ctx := context.Background()
	if err := run(ctx, *agent, *cycles, *previews, *fleet, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "lifetime:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, agent string, cycles, previews, fleet, workers int) error {
	srv, err := benchserver.Start(ctx, func(c *config.Config) {
		c.Driver = "namespace"
		c.AgentPath = agent
		c.WarmPool = 0
	})
	if err != nil {
		return err
	}
	defer srv.Stop(ctx)
	c := srv.Client
	fmt.Println("## lifetime: pause, resume, auto-resume, idle fleet (namespace driver)")
	fmt.Println()
	if err := pauseResume(ctx, c, cycles); err != nil {
		return fmt.Errorf("pause and resume: %w", err)
	}
	if err := previewResume(ctx, srv, previews); err != nil {
		return fmt.Errorf("auto-resume: %w", err)
	}
	if fleet > 0 {
		if err := idleFleet(ctx, c, fleet, workers); err != nil {
			return fmt.Errorf("idle fleet: %w", err)
		}
	}
	return nil
}

// pauseResume times n pauses and resumes of a sandbox whose process keeps
// a core busy, and checks the process runs on.
func pauseResume(ctx context.Context, c *client.Client, n int) error {
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return err
	}
	defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
	p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "while :; do :; done"}})
	if err != nil {
		return err
	}
	var pause, resume []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := c.PauseSandbox(ctx, sb.ID); err != nil {
			return err
		}
		t1 := time.Now()
		if _, err := c.ResumeSandbox(ctx, sb.ID); err != nil {
			return err
		}
		pause, resume = append(pause, t1.Sub(t0)), append(resume, time.Since(t1))
	}
	proc, err := c.GetProcess(ctx, sb.ID, p.PID)
	if err != nil || !proc.Running {
		return fmt.Errorf("the busy process after %d pauses: %+v, %v", n, proc, err)
	}
	fmt.Printf("### Pause and resume, one sandbox with a process spinning on a core, %d cycles\n", n)
	fmt.Println("| call | n | p50 | p95 |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| POST /pause (frozen when it answers) | %d | %s | %s |\n", n, stat.MS(stat.Pct(pause, 50)), stat.MS(stat.Pct(pause, 95)))
	fmt.Printf("| POST /resume (thawed, its calls pass again) | %d | %s | %s |\n", n, stat.MS(stat.Pct(resume, 50)), stat.MS(stat.Pct(resume, 95)))
	fmt.Println()
	return nil
}

// previewResume times preview requests to a web server in a sandbox:
// warm ones, and the first one after each pause, which resumes it.
func previewResume(ctx context.Context, srv *benchserver.Server, n int) error {
	c := srv.Client
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return err
	}
	defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
	serve := fmt.Sprintf("mkdir -p /tmp/www && echo hello > /tmp/www/index.html && exec busybox httpd -f -p 127.0.0.1:%d -h /tmp/www", appPort)
	if _, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", serve}}); err != nil {
		return err
	}
	addr := srv.Addr()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}}}
	defer hc.CloseIdleConnections()
	_, port, _ := net.SplitHostPort(addr)
	u := "http://" + strconv.Itoa(appPort) + "-" + sb.ID + ".localhost:" + port + "/"
	get := func() (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+srv.Key)
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "hello\n" {
			return 0, fmt.Errorf("preview answered %d %q", resp.StatusCode, body)
		}
		return time.Since(t0), nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := get(); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the web server never answered: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var warm, first []time.Duration
	for range n {
		d, err := get()
		if err != nil {
			return err
		}
		warm = append(warm, d)
		if _, err := c.PauseSandbox(ctx, sb.ID); err != nil {
			return err
		}
		if d, err = get(); err != nil {
			return err
		}
		first = append(first, d)
	}
	fmt.Printf("### A preview request (busybox httpd in the sandbox, through the router with the API key), %d of each\n", n)
	fmt.Println("| request | n | p50 | p95 |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| to a running sandbox | %d | %s | %s |\n", n, stat.MS(stat.Pct(warm, 50)), stat.MS(stat.Pct(warm, 95)))
	fmt.Printf("| first to a paused sandbox (auto-resume) | %d | %s | %s |\n", n, stat.MS(stat.Pct(first, 50)), stat.MS(stat.Pct(first, 95)))
	fmt.Printf("| added by the resume (p50 − p50) | | %s | |\n", stat.MS(stat.Pct(first, 50)-stat.Pct(warm, 50)))
	fmt.Println()
	return nil
}

// idleFleet keeps n idle sandboxes at once, running and then paused, and
// reads the memory they take.
func idleFleet(ctx context.Context, c *client.Client, n, workers int) error {
	avail0, _, err := hostinfo.Memory()
	if err != nil {
		return err
	}
	ids := make([]string, n)
	created := make([]time.Duration, n)
	defer func() {
		each(workers, n, func(i int) error {
			if ids[i] != "" {
				return c.DeleteSandbox(context.WithoutCancel(ctx), ids[i])
			}
			return nil
		})
	}()
	began := time.Now()
	err = each(workers, n, func(i int) error {
		t0 := time.Now()
		sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
		if err != nil {
			return fmt.Errorf("sandbox %d of %d: %w", i+1, n, err)
		}
		ids[i], created[i] = sb.ID, time.Since(t0)
		return nil
	})
	if err != nil {
		return err
	}
	createAll := time.Since(began)
	time.Sleep(2 * time.Second) // let the agents settle
	running, err := fleetMemory(ids, avail0)
	if err != nil {
		return err
	}
	paused := make([]time.Duration, n)
	began = time.Now()
	err = each(workers, n, func(i int) error {
		t0 := time.Now()
		_, err := c.PauseSandbox(ctx, ids[i])
		paused[i] = time.Since(t0)
		return err
	})
	if err != nil {
		return err
	}
	pauseAll := time.Since(began)
	frozen, err := fleetMemory(ids, avail0)
	if err != nil {
		return err
	}
	count := 0
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{State: api.StatePaused}) {
		if err != nil {
			return err
		}
		if sb.State == api.StatePaused {
			count++
		}
	}
	fmt.Printf("### %d idle sandboxes at once (%d creates at a time)\n", n, workers)
	fmt.Println("| what | n | p50 | p95 | total |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| create, all kept | %d | %s | %s | %.2f s |\n", n, stat.MS(stat.Pct(created, 50)), stat.MS(stat.Pct(created, 95)), createAll.Seconds())
	fmt.Printf("| pause each | %d | %s | %s | %.2f s |\n", n, stat.MS(stat.Pct(paused, 50)), stat.MS(stat.Pct(paused, 95)), pauseAll.Seconds())
	fmt.Println()
	fmt.Println("| memory | running: total | per sandbox | paused: total | per sandbox |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| the sandboxes' own cgroups (agent and commands, kernel memory included) | %s | %s | %s | %s |\n",
		mib(running.cgroups), mib(running.cgroups/int64(n)), mib(frozen.cgroups), mib(frozen.cgroups/int64(n)))
	fmt.Printf("| host MemAvailable drop | %s | %s | %s | %s |\n",
		mib(running.availDrop), mib(running.availDrop/int64(n)), mib(frozen.availDrop), mib(frozen.availDrop/int64(n)))
	fmt.Println()
	fmt.Printf("All %d alive at once; %d listed paused after the pauses.\n\n", n, count)
	return nil
}

// memory is what a fleet takes.
type memory struct{ cgroups, availDrop int64 }

// fleetMemory sums the fleet's cgroups and reads the host's available
// memory against avail0, read before the fleet.
func fleetMemory(ids []string, avail0 uint64) (memory, error) {
	var m memory
	for _, id := range ids {
		n, err := cgroupMemory(id)
		if err != nil {
			return m, err
		}
		m.cgroups += n
	}
	avail, _, err := hostinfo.Memory()
	if err != nil {
		return m, err
	}
	m.availDrop = int64(avail0) - int64(avail)
	return m, nil
}

// cgroupMemory is what sandbox id's cgroup (hutch's default parent) holds:
// memory.usage_in_bytes on v1, memory.current on v2.
func cgroupMemory(id string) (int64, error) {
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup/memory/hutch", id, "memory.usage_in_bytes"),
		filepath.Join("/sys/fs/cgroup/hutch", id, "memory.current"),
	} {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return 0, fmt.Errorf("no memory cgroup of sandbox %s", id)
}

// each runs fn(0…n-1) on workers goroutines and returns the first error.
func each(workers, n int, fn func(i int) error) error {
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// cmpErr keeps the first error.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
