// Command streams measures long-running work through the whole stack, in
// one run: output read through the API against the same program's pipe
// read directly (a command's exec stream, binary frames and NDJSON; a background process's
// output as Server-Sent Events, as JSON WebSocket messages and as binary
// WebSocket messages); the keystroke → echo round trip of a terminal over
// the WebSocket; and many output streams followed at once. It starts its
// own hutch server on loopback, in this process.
//
//	go build -o bin/ ./cmd/... ./bench/... && bin/streams -agent bin/hutch-agent
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/server/config"
)

func main() {
	agent := flag.String("agent", "", "path of hutch-agent (default: beside this binary)")
	driver := flag.String("driver", "auto", "driver to measure")
	size := flag.Int("mib", 256, "MiB of output for the throughput part")
	keys := flag.Int("keys", 300, "keystrokes to time on the terminal")
	streams := flag.Int("streams", 100, "output streams to follow at once")
	lines := flag.Int("lines", 20000, "lines each of those streams' processes prints")
	rounds := flag.Int("rounds", 3, "rounds of each throughput path (the median is shown)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the throughput part to this file")
	only := flag.String("only", "", "measure only the throughput paths whose name contains this (e.g. \"binary frames\")")
	flag.Parse()
	ctx := context.Background()
	if err := run(ctx, *agent, *driver, *size<<20, *rounds, *cpuprofile, *only, *keys, *streams, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "streams:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, agent, driver string, size, rounds int, cpuprofile, only string, keys, streams, lines int) error {
	var direct, relayed []throughput
	for range rounds {
		d, err := directPipe(size)
		if err != nil {
			return err
		}
		direct = append(direct, throughput{delivered: int64(size), elapsed: d})
		if d, err = relayedPipe(size); err != nil {
			return fmt.Errorf("relayed pipe: %w", err)
		}
		relayed = append(relayed, throughput{delivered: int64(size), elapsed: d})
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

	paths := []path{
		{"exec stream, binary frames", func() (throughput, error) { return throughExec(ctx, c, sb.ID, size) }},
		{"exec stream, NDJSON (base64)", func() (throughput, error) { return throughExecNDJSON(ctx, bs, sb.ID, size) }},
		{"process output, SSE (base64)", func() (throughput, error) { return throughOutput(ctx, c, sb.ID, size, client.OutputSSE) }},
		{"process output, WebSocket JSON (base64)", func() (throughput, error) {
			return throughOutput(ctx, c, sb.ID, size, client.OutputWebSocketJSON)
		}},
		{"process output, WebSocket binary", func() (throughput, error) { return throughOutput(ctx, c, sb.ID, size, client.OutputWebSocket) }},
	}
	paths = slices.DeleteFunc(paths, func(p path) bool { return !strings.Contains(p.name, only) })
	stop := func() {}
	if cpuprofile != "" {
		if stop, err = startProfile(cpuprofile); err != nil {
			return err
		}
	}
	results := make([]throughput, len(paths))
	for i, p := range paths {
		var all []throughput
		for range rounds {
			t, err := p.run()
			if err != nil {
				return fmt.Errorf("throughput, %s: %w", p.name, err)
			}
			all = append(all, t)
		}
		results[i] = median(all)
	}
	stop()
	floor, hops := median(direct), median(relayed)
	fmt.Printf("### Output throughput, `head -c %d MiB /dev/zero` (median of %d rounds)\n", size>>20, rounds)
	fmt.Println("| path | bytes delivered | dropped | time | MiB/s | / pipe | / three hops |")
	fmt.Println("|---|---|---|---|---|---|---|")
	row := func(name string, t throughput) {
		fmt.Printf("| %s | %d | %d | %s | %.0f | %.2f | %.2f |\n", name, t.delivered, t.dropped, t.elapsed.Round(time.Millisecond), t.rate(), t.rate()/floor.rate(), t.rate()/hops.rate())
	}
	row("pipe read directly (floor)", floor)
	row("three hops: pipe → Unix socket → loopback TCP, copy loops", hops)
	for i, p := range paths {
		row(p.name, results[i])
	}
	fmt.Println()

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
	return timeHead(size, func(out io.Reader) (int64, error) {
		return io.CopyBuffer(io.Discard, out, make([]byte, 32<<10))
	})
}

// timeHead runs `head -c size /dev/zero` and times read, which must take
// all of its output, until head has exited.
func timeHead(size int, read func(out io.Reader) (int64, error)) (time.Duration, error) {
	cmd := exec.Command("head", "-c", strconv.Itoa(size), "/dev/zero")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n, err := read(out)
	if werr := cmd.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return 0, err
	}
	if n != int64(size) {
		return 0, fmt.Errorf("read %d bytes, want %d", n, size)
	}
	return time.Since(start), nil
}

// path is one way output reaches a client, measured by run.
type path struct {
	name string
	run  func() (throughput, error)
}

type throughput struct {
	delivered, dropped int64
	elapsed            time.Duration
}

// rate is the bytes delivered per second, in MiB.
func (t throughput) rate() float64 { return mibps(t.delivered, t.elapsed) }

// median is the round of the median rate.
func median(ts []throughput) throughput {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b throughput) int { return cmp.Compare(a.rate(), b.rate()) })
	return s[len(s)/2]
}

// throughExec runs the same program as a command in the sandbox and reads
// its exec stream until the exit event. The command's pipe is read no
// faster than the stream is: nothing is dropped.
func throughExec(ctx context.Context, c *client.Client, id string, size int) (throughput, error) {
	var t throughput
	start := time.Now()
	st, err := c.ExecStream(ctx, id, api.ExecRequest{Cmd: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}})
	if err != nil {
		return t, err
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err == io.EOF {
			t.elapsed = time.Since(start)
			if t.delivered != int64(size) {
				return t, fmt.Errorf("%d delivered, want %d", t.delivered, size)
			}
			return t, nil
		}
		if err != nil {
			return t, err
		}
		t.delivered += int64(len(ev.Data))
		st.Recycle(ev.Data)
	}
}

// throughExecNDJSON is throughExec over the exec stream's NDJSON form (a
// request without Accept, as curl sends it), decoded with encoding/json.
func throughExecNDJSON(ctx context.Context, bs *benchserver.Server, id string, size int) (throughput, error) {
	var t throughput
	start := time.Now()
	body := `{"cmd":["head","-c","` + strconv.Itoa(size) + `","/dev/zero"]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+bs.Addr()+"/v1/sandboxes/"+id+"/exec/stream", strings.NewReader(body))
	if err != nil {
		return t, err
	}
	req.Header.Set("Authorization", "Bearer "+bs.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), client.MaxEventSize)
	var data []byte // an output event's bytes; reused
	for sc.Scan() {
		// Output events as the server writes them, decoded without
		// encoding/json's passes over the data (as the Go client does);
		// any other line through encoding/json.
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte(`{"type":"stdout","data":"`)); ok {
			var err error
			if data, err = base64.StdEncoding.AppendDecode(data[:0], bytes.TrimSuffix(rest, []byte(`"}`))); err != nil {
				return t, fmt.Errorf("NDJSON exec stream: %w", err)
			}
			t.delivered += int64(len(data))
			continue
		}
		var ev api.ExecEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return t, fmt.Errorf("NDJSON exec stream: %w", err)
		}
		t.delivered += int64(len(ev.Data))
		if ev.Type == api.ExecExit {
			t.elapsed = time.Since(start)
			if t.delivered != int64(size) {
				return t, fmt.Errorf("%d delivered, want %d", t.delivered, size)
			}
			return t, nil
		}
	}
	return t, fmt.Errorf("NDJSON exec stream ended before its exit event: %v", sc.Err())
}

// throughOutput starts the same program in the sandbox as a background
// process and follows its output from the start over transport until its
// exit event, timed from opening the stream. The process is never slowed
// by its readers: what the stream could not keep up with is dropped from
// the process's buffer and counted.
func throughOutput(ctx context.Context, c *client.Client, id string, size int, transport client.OutputTransport) (throughput, error) {
	var t throughput
	p, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}})
	if err != nil {
		return t, err
	}
	start := time.Now()
	st, err := c.ProcessOutputOver(ctx, id, p.PID, 0, true, transport)
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
		st.Recycle(ev.Data)
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

// startProfile writes a CPU profile of this process (the server and the
// client) to path until the returned stop.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
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
