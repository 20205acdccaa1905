// Command network measures what crosses a sandbox's boundary, in one run:
// a preview (the router and the agent's tunnel) against the same HTTP
// server reached directly, under many connections; and a download through
// the egress proxy against the same download made directly on the host.
// It starts its own hutch server on loopback. Each load reports the CPU
// each party spent per request (cpu.go), and a last table the figures
// issue 11 sets targets for: throughput against direct and p99 added at
// the most connections.
//
//	go build -o bin/ ./cmd/... ./bench/... && bin/network -agent bin/hutch-agent
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/server/config"
)

// appPort is where the server inside the sandbox listens.
const appPort = 8080

type options struct {
	agent, driver string
	conns         []int
	work          []time.Duration
	duration      time.Duration
	body          int
	mib           int
	runs          int
	spin          int    // SHA-256 rounds in a millisecond of work (serve -spin)
	only          string // "previews" or "egress": run that part alone
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		serve(os.Args[2:])
		return
	}
	var o options
	flag.StringVar(&o.agent, "agent", "", "path of hutch-agent (default: beside this binary)")
	flag.StringVar(&o.driver, "driver", "namespace", "driver to measure")
	conns := flag.String("conns", "1,64", "connections of each preview load, comma-separated")
	work := flag.String("work", "0s,1ms", "CPU work the server does for each request (as much as takes this long on an idle CPU), comma-separated: one set of loads each")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured window of each load run (after a 1 s warm-up)")
	flag.IntVar(&o.body, "body", 1024, "bytes of each preview answer")
	flag.IntVar(&o.mib, "mib", 100, "MiB of the egress download")
	flag.IntVar(&o.runs, "runs", 3, "downloads each way (the median is reported)")
	flag.StringVar(&o.only, "only", "", "run one part alone: previews or egress")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the control plane and the load) here")
	flag.Parse()
	o.conns = list("conns", *conns, func(f string) (int, bool) {
		n, err := strconv.Atoi(f)
		return n, err == nil && n > 0
	})
	o.work = list("work", *work, func(f string) (time.Duration, bool) {
		d, err := time.ParseDuration(f)
		return d, err == nil && d >= 0
	})
	if o.only != "" && o.only != "previews" && o.only != "egress" {
		fmt.Fprintf(os.Stderr, "network: -only: %q is neither previews nor egress\n", o.only)
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "network:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "network:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Both servers do the same work per request: what a millisecond of
	// it is, measured once here.
	o.spin = spinRate()
	host, stop, err := startHostServer(self, o.body, o.spin)
	if err != nil {
		return err
	}
	defer stop()
	bs, err := benchserver.Start(ctx, func(cfg *config.Config) {
		cfg.AgentPath, cfg.Driver, cfg.WarmPool = o.agent, o.driver, 0
		cfg.EgressAllowPrivate = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
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
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{
		Limits:  &api.Limits{Pids: 4096, MemoryMB: 2048, CPU: float64(runtime.NumCPU())},
		Network: &api.NetworkPolicy{Egress: api.EgressAllowlist, Allow: []string{"127.0.0.1"}},
	})
	if err != nil {
		return err
	}
	defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
	fmt.Printf("hutch network benchmark — driver %s (%s), %d CPUs, %s, %s; 1 ms of work is %d SHA-256 rounds\n\n",
		info.Driver, info.Isolation, runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, time.Now().UTC().Format("2006-01-02"), o.spin)

	switch {
	case o.only == "egress":
	case info.Driver == "namespace":
		sets, err := previews(ctx, c, bs.Addr(), bs.Key, sb.ID, self, host, o)
		if err != nil {
			return fmt.Errorf("previews: %w", err)
		}
		targets(sets)
	default:
		fmt.Printf("(previews: the %s driver has none)\n\n", info.Driver)
	}
	if o.only == "previews" {
		return nil
	}
	if err := egress(ctx, c, sb.ID, host.addr, o); err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	return nil
}

// list parses a comma-separated flag, exiting on a bad element.
func list[T any](name, v string, parse func(string) (T, bool)) []T {
	var out []T
	for _, f := range strings.Split(v, ",") {
		x, ok := parse(strings.TrimSpace(f))
		if !ok {
			fmt.Fprintf(os.Stderr, "network: -%s: bad element %q\n", name, f)
			os.Exit(2)
		}
		out = append(out, x)
	}
	return out
}

// hostServer is `self serve` on the host's loopback.
type hostServer struct {
	addr string
	pid  int
}

// startHostServer runs `self serve` on the host's loopback.
func startHostServer(self string, body, spin int) (hostServer, func(), error) {
	cmd := exec.Command(self, "serve", "-body", strconv.Itoa(body), "-spin", strconv.Itoa(spin))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return hostServer{}, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return hostServer{}, nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return hostServer{}, nil, fmt.Errorf("host server: %w", err)
	}
	return hostServer{addr: strings.TrimSpace(line), pid: cmd.Process.Pid}, stop, nil
}

// loadSet is the three loads of one number of connections and one amount
// of work per request.
type loadSet struct {
	conns                   int
	work                    time.Duration
	direct, public, private result
}

// previews loads the same server inside the sandbox through its preview
// URL (public, then private with an API key) and on the host directly.
func previews(ctx context.Context, c *client.Client, apiAddr, key, id, self string, hs hostServer, o options) ([]loadSet, error) {
	f, err := os.Open(self)
	if err != nil {
		return nil, err
	}
	_, err = c.WriteFile(ctx, id, "netbench", 0o755, f)
	f.Close()
	if err != nil {
		return nil, err
	}
	if _, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: []string{"./netbench", "serve", "-addr", "127.0.0.1:" + strconv.Itoa(appPort),
		"-body", strconv.Itoa(o.body), "-spin", strconv.Itoa(o.spin)}}); err != nil {
		return nil, err
	}
	if _, err := c.SetPortPublic(ctx, id, appPort, true); err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(apiAddr, ":")
	host := fmt.Sprintf("%d-%s.localhost:%s", appPort, id, port)
	if err := waitServing(ctx, apiAddr, host); err != nil {
		return nil, err
	}
	auth := http.Header{"Authorization": {"Bearer " + key}}
	var sets []loadSet
	for _, work := range o.work {
		s, err := previewLoads(ctx, c, apiAddr, host, hs, id, auth, work, o)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s...)
	}
	return sets, nil
}

// previewLoads runs the loads of one amount of work per request.
func previewLoads(ctx context.Context, c *client.Client, apiAddr, host string, hs hostServer, id string, auth http.Header, work time.Duration, o options) ([]loadSet, error) {
	path := "/?work=" + work.String()
	direct, inSandbox := parties{hostServer: hs.pid}, parties{sandbox: id}
	var sets []loadSet
	for _, conns := range o.conns {
		s := loadSet{conns: conns, work: work}
		if _, err := c.SetPortPublic(ctx, id, appPort, true); err != nil {
			return nil, err
		}
		var err error
		if s.direct, err = load(ctx, hs.addr, "http://"+hs.addr+path, "", nil, conns, o.duration, direct); err != nil {
			return nil, fmt.Errorf("direct: %w", err)
		}
		if s.public, err = load(ctx, apiAddr, "http://"+host+path, host, nil, conns, o.duration, inSandbox); err != nil {
			return nil, fmt.Errorf("public preview: %w", err)
		}
		if _, err := c.SetPortPublic(ctx, id, appPort, false); err != nil {
			return nil, err
		}
		if s.private, err = load(ctx, apiAddr, "http://"+host+path, host, auth, conns, o.duration, inSandbox); err != nil {
			return nil, fmt.Errorf("private preview: %w", err)
		}
		fmt.Printf("### Preview vs direct: %d connections, %s per run, %d-byte answers, %s of CPU per request\n", conns, o.duration, o.body, work)
		fmt.Println("CPU per request, in µs: this process (the control plane, with the router, and the load generator), the sandbox's agent, the server.")
		fmt.Println()
		fmt.Println("| path | requests | errors | req/s | / direct | p50 | p99 | p99 added | CPU: hutch + load | agent | server |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
		row := func(name string, r result) {
			fmt.Printf("| %s | %d | %d | %.0f | %.2f | %s | %s | %s | %s | %s | %s |\n", name, r.n, r.errors, r.rps(), r.rps()/s.direct.rps(),
				ms(r.pct(50)), ms(r.pct(99)), ms(r.pct(99)-s.direct.pct(99)), us(r.perReq(r.cpu.self)), us(r.perReq(r.cpu.agent)), us(r.perReq(r.cpu.server)))
		}
		row("the same server on the host, direct (floor)", s.direct)
		row("preview, public port", s.public)
		row("preview, private, API key", s.private)
		fmt.Println()
		sets = append(sets, s)
	}
	return sets, nil
}

// targets prints the figures issue 11 sets targets for: at the most
// connections measured, throughput against direct and p99 added, for each
// amount of work.
func targets(sets []loadSet) {
	most := 0
	for _, s := range sets {
		most = max(most, s.conns)
	}
	fmt.Printf("### Targets: %d connections, the preview against direct in the same run\n", most)
	fmt.Println("| figure | public port | private, API key | target |")
	fmt.Println("|---|---|---|---|")
	for _, s := range sets {
		if s.conns != most {
			continue
		}
		goal := "—"
		switch s.work {
		case 0:
			goal = "≥ 0.60"
		case time.Millisecond:
			goal = "≥ 0.95"
		}
		fmt.Printf("| throughput / direct, %s of CPU per request | %.2f | %.2f | %s |\n", s.work,
			s.public.rps()/s.direct.rps(), s.private.rps()/s.direct.rps(), goal)
	}
	for _, s := range sets {
		if s.conns != most {
			continue
		}
		fmt.Printf("| p99 added, %s of CPU per request (direct p99 %s) | %+.2f ms | %+.2f ms | ≤ +2 ms |\n", s.work, ms(s.direct.pct(99)),
			msf(s.public.pct(99)-s.direct.pct(99)), msf(s.private.pct(99)-s.direct.pct(99)))
	}
	fmt.Println()
}

// waitServing waits until the preview answers 200.
func waitServing(ctx context.Context, apiAddr, host string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+apiAddr+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the server in the sandbox never answered through its preview")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// egress downloads o.mib MiB from the host's server through the sandbox's
// egress proxy, and directly on the host, with curl both ways.
func egress(ctx context.Context, c *client.Client, id, hostAddr string, o options) error {
	size := int64(o.mib) << 20
	url := fmt.Sprintf("http://%s/bytes?n=%d", hostAddr, size)
	const format = "%{time_total} %{size_download}"
	var direct, proxied []time.Duration
	for range o.runs {
		out, err := exec.CommandContext(ctx, "curl", "-sS", "-o", "/dev/null", "-w", format, url).Output()
		if err != nil {
			return fmt.Errorf("curl on the host: %w", err)
		}
		d, err := curlTime(string(out), size)
		if err != nil {
			return err
		}
		direct = append(direct, d)
		res, err := c.Exec(ctx, id, api.ExecRequest{Cmd: []string{"sh", "-c",
			`curl -sS -o /dev/null --noproxy '' -x "$HTTP_PROXY" -w '` + format + `' '` + url + `'`}, TimeoutMS: 600_000})
		if err != nil || res.ExitCode != 0 {
			return fmt.Errorf("curl in the sandbox: %+v, %v", res, err)
		}
		if d, err = curlTime(res.Stdout, size); err != nil {
			return err
		}
		proxied = append(proxied, d)
	}
	slices.Sort(direct)
	slices.Sort(proxied)
	dm, pm := direct[len(direct)/2], proxied[len(proxied)/2]
	fmt.Printf("### Egress: a %d MiB download, curl, median of %d\n", o.mib, o.runs)
	fmt.Println("| path | time | MiB/s | / direct |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| on the host, direct (floor) | %s | %.0f | 1.00 |\n", dm.Round(time.Millisecond), mibps(size, dm))
	fmt.Printf("| in the sandbox, through the egress proxy | %s | %.0f | %.2f |\n\n", pm.Round(time.Millisecond), mibps(size, pm), mibps(size, pm)/mibps(size, dm))
	return nil
}

// curlTime reads curl's "time_total size_download" and checks the size.
func curlTime(out string, want int64) (time.Duration, error) {
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, fmt.Errorf("curl printed %q", out)
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, err
	}
	if n, _ := strconv.ParseFloat(f[1], 64); int64(n) != want {
		return 0, fmt.Errorf("curl downloaded %s bytes of %d", f[1], want)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func mibps(n int64, d time.Duration) float64 { return float64(n) / (1 << 20) / d.Seconds() }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", msf(d)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }
