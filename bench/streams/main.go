// Command streams measures long-running work through the whole stack, in
// one run: a process's output read through the API (Server-Sent Events)
// against the same program's pipe read directly; the keystroke → echo
// round trip of a terminal over the WebSocket; and many output streams
// followed at once. It starts its own hutch server on loopback.
//
//	go build -o bin/ ./cmd/... ./bench/... && bin/streams -agent bin/hutch-agent
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/config"
)

func main() {
	agent := flag.String("agent", "", "path of hutch-agent (default: beside this binary)")
	driver := flag.String("driver", "auto", "driver to measure")
	size := flag.Int("mib", 256, "MiB of output for the throughput part")
	keys := flag.Int("keys", 300, "keystrokes to time on the terminal")
	streams := flag.Int("streams", 100, "output streams to follow at once")
	lines := flag.Int("lines", 20000, "lines each of those streams' processes prints")
	flag.Parse()
	ctx := context.Background()
	if err := run(ctx, *agent, *driver, *size<<20, *keys, *streams, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "streams:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, agent, driver string, size, keys, streams, lines int) error {
	direct, err := directPipe(size)
	if err != nil {
		return err
	}
	bs, err := benchserver.Start(ctx, func(cfg *config.Config) { cfg.AgentPath, cfg.Driver = agent, driver })
	if err != nil {
		return err
	}
	defer bs.Stop(ctx)
	c := bs.Client
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Limits: &api.Limits{Pids: 4096, MemoryMB: 2048}})
	if err != nil {
		return err
	}
	defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
	fmt.Printf("hutch streams benchmark — driver %s (%s), %d CPUs, %s, %s\n\n",
		info.Driver, info.Isolation, runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))

	thr, err := throughAPI(ctx, c, sb.ID, size)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	fmt.Println("### Output throughput, `head -c N /dev/zero`")
	fmt.Println("| path | bytes delivered | dropped | time | MiB/s | / direct |")
	fmt.Println("|---|---|---|---|---|---|")
	fmt.Printf("| pipe read directly (floor) | %d | 0 | %s | %.0f | 1.00 |\n", size, direct.Round(time.Millisecond), mibps(int64(size), direct))
	fmt.Printf("| API, SSE, following from cursor 0 | %d | %d | %s | %.0f | %.2f |\n\n", thr.delivered, thr.dropped, thr.elapsed.Round(time.Millisecond),
		mibps(thr.delivered, thr.elapsed), mibps(thr.delivered, thr.elapsed)/mibps(int64(size), direct))

	rtts, err := keystrokes(ctx, c, sb.ID, keys)
	if err != nil {
		return fmt.Errorf("keystrokes: %w", err)
	}
	fmt.Println("### Terminal keystroke → echo, WebSocket through the API to a PTY")
	fmt.Println("| n | p50 | p95 | p99 |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| %d | %s | %s | %s |\n\n", len(rtts), pct(rtts, 50), pct(rtts, 95), pct(rtts, 99))

	many, err := manyStreams(ctx, c, sb.ID, streams, lines)
	if err != nil {
		return fmt.Errorf("concurrent streams: %w", err)
	}
	fmt.Printf("### %d output streams followed at once (each process: `seq 1 %d` after a pause)\n", streams, lines)
	fmt.Println("| streams complete | bytes in all | dropped | wall time | MiB/s in all | per stream p50 | p95 |")
	fmt.Println("|---|---|---|---|---|---|---|")
	fmt.Printf("| %d of %d | %d | %d | %s | %.1f | %s | %s |\n", many.complete, streams, many.bytes, many.dropped,
		many.wall.Round(time.Millisecond), mibps(many.bytes, many.wall), pct(many.each, 50), pct(many.each, 95))
	return nil
}

// directPipe times reading the output of `head -c size /dev/zero` from its
// pipe, in 32 KiB reads like the agent's.
func directPipe(size int) (time.Duration, error) {
	cmd := exec.Command("head", "-c", strconv.Itoa(size), "/dev/zero")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n, err := io.CopyBuffer(io.Discard, out, make([]byte, 32<<10))
	if err != nil {
		return 0, err
	}
	if err := cmd.Wait(); err != nil {
		return 0, err
	}
	if n != int64(size) {
		return 0, fmt.Errorf("read %d bytes, want %d", n, size)
	}
	return time.Since(start), nil
}

type throughput struct {
	delivered, dropped int64
	elapsed            time.Duration
}

// throughAPI starts the same program in the sandbox and follows its
// output from the start through the API until its exit event.
func throughAPI(ctx context.Context, c *client.Client, id string, size int) (throughput, error) {
	var t throughput
	start := time.Now()
	p, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}})
	if err != nil {
		return t, err
	}
	st, err := c.ProcessOutput(ctx, id, p.PID, 0, true)
	if err != nil {
		return t, err
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			return t, fmt.Errorf("stream ended without the exit event: %w", err)
		}
		t.delivered += int64(len(ev.Data))
		t.dropped += ev.Dropped
		if ev.Type == api.OutputExit {
			t.elapsed = time.Since(start)
			if t.delivered+t.dropped != int64(size) {
				return t, fmt.Errorf("%d delivered + %d dropped, want %d", t.delivered, t.dropped, size)
			}
			return t, nil
		}
	}
}

// keystrokes times one byte typed into a terminal running cat until the
// terminal echoes it back.
func keystrokes(ctx context.Context, c *client.Client, id string, n int) ([]time.Duration, error) {
	term, err := c.OpenTerminal(ctx, id, client.TerminalOptions{Cmd: []string{"cat"}})
	if err != nil {
		return nil, err
	}
	defer term.Close()
	defer term.Signal(context.WithoutCancel(ctx), "KILL")
	var out []time.Duration
	for i := 0; i < n+10; i++ {
		key := []byte{byte('a' + i%26)}
		start := time.Now()
		if err := term.Input(ctx, key); err != nil {
			return nil, err
		}
		for {
			o, err := term.Next(ctx)
			if err != nil {
				return nil, err
			}
			if bytes.Contains(o.Data, key) {
				break
			}
		}
		if i >= 10 { // the first ones warm the path up
			out = append(out, time.Since(start))
		}
	}
	return out, nil
}

type concurrent struct {
	complete       int
	bytes, dropped int64
	wall           time.Duration
	each           []time.Duration
}

// manyStreams starts n processes that pause, then print lines; follows
// all n outputs at once from the start; and times until every stream has
// seen its exit.
func manyStreams(ctx context.Context, c *client.Client, id string, n, lines int) (concurrent, error) {
	var res concurrent
	pids := make([]int, n)
	for i := range pids {
		p, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", "sleep 2; seq 1 " + strconv.Itoa(lines)}})
		if err != nil {
			return res, err
		}
		pids[i] = p.PID
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	start := time.Now()
	for _, pid := range pids {
		wg.Go(func() {
			s := time.Now()
			st, err := c.ProcessOutput(ctx, id, pid, 0, true)
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
				return
			}
			defer st.Close()
			var got, dropped int64
			for {
				ev, err := st.Next()
				if err != nil {
					return
				}
				got += int64(len(ev.Data))
				dropped += ev.Dropped
				if ev.Type == api.OutputExit {
					mu.Lock()
					res.complete++
					res.bytes += got
					res.dropped += dropped
					res.each = append(res.each, time.Since(s))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	return res, firstErr
}

func mibps(n int64, d time.Duration) float64 { return float64(n) / (1 << 20) / d.Seconds() }

func pct(v []time.Duration, p int) string {
	if len(v) == 0 {
		return "-"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.2f ms", float64(s[(len(s)-1)*p/100].Microseconds())/1000)
}
