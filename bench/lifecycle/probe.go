package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// probeOptions say how -alive probes the cost of calls as its fleet
// grows: every sandboxes created (0: never), samples calls of each
// operation each time, against the server at addr with key (the preview
// request goes to the router directly, as a browser would).
type probeOptions struct {
	every, samples int
	addr, key      string
}

// probePort is where the probe sandbox's web server listens.
const probePort = 8080

// probeFile is what each write probe writes to a file in the probe
// sandbox: 1 KiB.
var probeFile = bytes.Repeat([]byte{'h'}, 1024)

// probeOp is one operation a probe times: do runs it once and returns
// how long it took.
type probeOp struct {
	name string
	do   func(p *prober, ctx context.Context) (time.Duration, error)
}

// probeOps are the operations a probe times, in the order of its rounds,
// its tables and its chart's legend.
var probeOps = []probeOp{
	{"create", (*prober).create},
	{"exec `true`", (*prober).exec},
	{"file write (1 KiB)", (*prober).write},
	{"preview request", (*prober).request},
	listOp: {"list (first page)", (*prober).list},
}

// listOp is the list's index in probeOps: its page, unlike the other
// operations' work, grows with the first sandboxes.
const listOp = 4

// checkpoint is one probe of the fleet: with alive sandboxes created and
// kept, the timings of each of probeOps (by index), the calls that failed
// and the first failure.
type checkpoint struct {
	alive    int
	times    [][]time.Duration
	failed   []int
	firstErr string
	listed   int // sandboxes on the list's first page, the last time
}

// prober times the operations of probeOps between two creates of the
// fleet, in a sandbox of its own that runs a web server (busybox httpd)
// for the previews; creates are of fresh sandboxes, each destroyed once
// timed.
type prober struct {
	c       *client.Client
	o       probeOptions
	id      string
	preview string // the preview URL of the web server
	hc      *http.Client
	listed  int // sandboxes on the last list's first page
}

// startProber creates the probe sandbox, starts its web server and waits
// until the server answers through its preview.
func startProber(ctx context.Context, c *client.Client, o probeOptions) (p *prober, retErr error) {
	// The fleet may take hours to fill: the probe sandbox outlives the
	// default timeout.
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{TimeoutS: fillTimeoutS})
	if err != nil {
		return nil, fmt.Errorf("probe sandbox: %w", err)
	}
	// Every preview request reaches the router on the API's address,
	// whatever host it names, over kept-alive connections as a browser's.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", o.addr)
	}}}
	_, port, _ := net.SplitHostPort(o.addr)
	p = &prober{c: c, o: o, id: sb.ID, hc: hc,
		preview: "http://" + strconv.Itoa(probePort) + "-" + sb.ID + ".localhost:" + port + "/"}
	defer func() {
		if retErr != nil {
			p.close(ctx)
		}
	}()
	serve := fmt.Sprintf("mkdir -p /tmp/www && echo hello > /tmp/www/index.html && exec busybox httpd -f -p 127.0.0.1:%d -h /tmp/www", probePort)
	if _, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", serve}}); err != nil {
		return nil, fmt.Errorf("probe web server: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := p.get(ctx)
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("the probe's web server never answered: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// close destroys the probe sandbox.
func (p *prober) close(ctx context.Context) {
	p.hc.CloseIdleConnections()
	destroyAll(ctx, p.c, []string{p.id})
}

// measure probes the fleet at alive sandboxes: one round of every
// operation untimed (connections a long fill left idle are opened again),
// then o.samples rounds timed, printing its progress as a phase of its
// own. A failed call is counted, not fatal.
func (p *prober) measure(ctx context.Context, alive int) checkpoint {
	cp := checkpoint{alive: alive, times: make([][]time.Duration, len(probeOps)), failed: make([]int, len(probeOps))}
	tk := startTicker(os.Stderr, fmt.Sprintf("probe at %d alive", alive), len(probeOps)*p.o.samples)
	defer tk.finish()
	for round := -1; round < p.o.samples && ctx.Err() == nil; round++ {
		for i, op := range probeOps {
			var d time.Duration
			call := func() (err error) {
				d, err = op.do(p, ctx)
				return err
			}
			if round < 0 {
				call()
				continue
			}
			if err := tk.call(call); err != nil {
				cp.failed[i]++
				if cp.firstErr == "" {
					cp.firstErr = fmt.Sprintf("%s: %s", op.name, err)
				}
				continue
			}
			cp.times[i] = append(cp.times[i], d)
		}
	}
	cp.listed = p.listed
	return cp
}

// create creates a sandbox and destroys it; only the create is timed.
func (p *prober) create(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	sb, err := p.c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return 0, err
	}
	d := time.Since(start)
	return d, p.c.DeleteSandbox(ctx, sb.ID)
}

// exec runs `true` in the probe sandbox.
func (p *prober) exec(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	r, err := p.c.Exec(ctx, p.id, api.ExecRequest{Cmd: []string{"true"}})
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("true exited %d", r.ExitCode)
	}
	return time.Since(start), err
}

// write writes a small file in the probe sandbox through the files API.
func (p *prober) write(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	_, err := p.c.WriteFile(ctx, p.id, "probe.txt", 0o644, bytes.NewReader(probeFile))
	return time.Since(start), err
}

// request requests the probe's web server through its preview.
func (p *prober) request(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	err := p.get(ctx)
	return time.Since(start), err
}

// list lists the first page of sandboxes, the server's default page size.
func (p *prober) list(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	l, err := p.c.ListSandboxes(ctx, client.ListOptions{})
	if err != nil {
		return 0, err
	}
	p.listed = len(l.Sandboxes)
	return time.Since(start), nil
}

// get requests the probe's web server through its preview, with the API
// key, and checks the answer.
func (p *prober) get(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.preview, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.o.key)
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello\n" {
		return fmt.Errorf("preview answered %d %q", resp.StatusCode, body)
	}
	return nil
}
