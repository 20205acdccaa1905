// Command fleet measures what forwarding between nodes costs, and what a
// second node adds: two hutch servers, nodes "a" and "b", in this process
// on one Postgres with one cluster key.
//
// The hop: a sandbox runs on a. It times an exec (`true`, run to
// completion) sent to a, the sandbox's node, against the same sent to b,
// which forwards it to a; the same for a read of the sandbox's network
// policy, which a answers from memory (the hop with little else); and a
// create (then its destroy) sent to each,
// placement choosing a both ways (the creates ask for its label), so b
// forwards its creates. The target: forwarding adds at most
// 0.5 ms at p50.
//
// Creates per second (throughput.go): -clients concurrent clients create
// and destroy -creates sandboxes with no labels, first through a alone
// (b drained: placement chooses a), then through both nodes (each client
// sends to one; placement spreads the sandboxes).
//
// The nodes register and heartbeat themselves; node a is labelled
// bench=a, node b bench=b.
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/... ./bench/... && bin/fleet -agent bin/hutch-agent [-store-url postgres://...] [-cpuprofile fleet.prof]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/bench/internal/stat"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/edge/forward"
	"github.com/hutchdev/hutch/internal/server/config"
	"github.com/hutchdev/hutch/internal/testutil/pgtemp"
)

func main() { os.Exit(fleet()) }

// options are the benchmark's flags.
type options struct {
	agent, storeURL, cpuprofile string
	n, creates, clients         int
}

// fleet parses the flags, starts a Postgres when none is given, runs the
// benchmark and returns the exit code.
func fleet() int {
	var o options
	flag.StringVar(&o.agent, "agent", "", "path of hutch-agent (default: beside this binary)")
	flag.StringVar(&o.storeURL, "store-url", os.Getenv("HUTCH_STORE_URL"), "the Postgres both nodes share (an empty database; $HUTCH_STORE_URL; default: a throwaway cluster started here with Postgres's durable defaults)")
	flag.IntVar(&o.n, "n", 200, "execs through each node; a quarter as many creates")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the timed execs and reads to this file; samples are labelled node=a, node=b (each server's goroutines) or node=client (go tool pprof -tagfocus node=b)")
	flag.IntVar(&o.creates, "creates", 200, "sandboxes created and destroyed for creates/s, through one node and through two (0: skip)")
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients for creates/s")
	flag.Parse()
	if o.storeURL == "" {
		pg, err := pgtemp.Start(pgtemp.Options{Durable: true})
		if err == nil {
			defer pg.Stop()
			o.storeURL, err = pg.CreateDatabase("hutch")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet: a Postgres for the two nodes (or -store-url):", err)
			return 1
		}
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, o options) error {
	if o.agent == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.agent = filepath.Join(filepath.Dir(exe), "hutch-agent")
	}
	var k [32]byte
	rand.Read(k[:])
	os.Setenv(forward.KeyEnv, hex.EncodeToString(k[:]))
	a, err := startNode(ctx, "a", "", o)
	if err != nil {
		return fmt.Errorf("node a: %w", err)
	}
	defer a.Stop(ctx)
	b, err := startNode(ctx, "b", a.Key, o)
	if err != nil {
		return fmt.Errorf("node b: %w", err)
	}
	defer b.Stop(ctx)
	// What the bench itself does is the client's in a profile.
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("node", "client")))
	onA := map[string]string{"bench": "a"}
	sb, err := a.Client.CreateSandbox(ctx, api.CreateSandboxRequest{NodeLabels: onA})
	if err != nil {
		return err
	}
	defer a.Client.DeleteSandbox(ctx, sb.ID)
	via := map[string]*client.Client{"a (owner)": a.Client, "b (forwarded)": b.Client}
	order := []string{"a (owner)", "b (forwarded)"}
	exec, network, err := calls(ctx, via, order, sb.ID, o)
	if err != nil {
		return err
	}
	create := map[string][]time.Duration{}
	for i := range max(1, o.n/4) {
		for _, name := range turn(order, i) {
			t0 := time.Now()
			c, err := via[name].CreateSandbox(ctx, api.CreateSandboxRequest{NodeLabels: onA})
			if err != nil {
				return fmt.Errorf("create through %s: %w", name, err)
			}
			create[name] = append(create[name], time.Since(t0))
			if c.Node != "a" {
				return fmt.Errorf("create through %s placed on %q, not a", name, c.Node)
			}
			if err := a.Client.DeleteSandbox(ctx, c.ID); err != nil {
				return err
			}
		}
	}
	fmt.Printf("%-48s %10s %10s %10s\n", "", "p50", "p90", "p99")
	for _, what := range []struct {
		name string
		d    map[string][]time.Duration
	}{{"exec `true`", exec}, {"GET network (the hop alone)", network}, {"create (process driver)", create}} {
		for _, name := range order {
			d := what.d[name]
			fmt.Printf("%-48s %10s %10s %10s\n", what.name+" via "+name, stat.MS(stat.Pct(d, 50)), stat.MS(stat.Pct(d, 90)), stat.MS(stat.Pct(d, 99)))
		}
		fmt.Printf("%-48s %10s\n", "  forwarding adds (p50)", stat.MS(stat.Pct(what.d[order[1]], 50)-stat.Pct(what.d[order[0]], 50)))
	}
	if o.creates > 0 {
		return creates(ctx, a, b, o)
	}
	return nil
}

// startNode starts node name on o's store, process driver, labelled
// bench=name; adminKey is the store's admin key when another node made it.
// Every goroutine the node starts carries the profile label node=name.
func startNode(ctx context.Context, name, adminKey string, o options) (s *benchserver.Server, err error) {
	pprof.Do(ctx, pprof.Labels("node", name), func(ctx context.Context) {
		s, err = benchserver.Start(ctx, func(c *config.Config) {
			c.Store, c.StoreURL, c.Node = "postgres", o.storeURL, name
			c.Driver, c.AgentPath, c.WarmPool = "process", o.agent, 0
			// Creates that ask for bench=a are placed on a whichever node
			// they are sent to.
			c.NodeLabels = map[string]string{"bench": name}
			if adminKey != "" {
				// The store's admin key is a's first start's; b reads it
				// from its own data directory as a's client does.
				os.WriteFile(filepath.Join(c.DataDir, "admin.key"), []byte(adminKey+"\n"), 0o600)
			}
		})
	})
	return s, err
}

// calls times o.n execs of `true` in sandbox id through each client of
// via, alternating (turn), and as many reads of its network policy (GET
// /v1/sandboxes/{id}/network: a forwarded request the owner answers from
// memory, so the hop alone), after 10 warm-up calls each, under a CPU
// profile when o asks for one.
func calls(ctx context.Context, via map[string]*client.Client, order []string, id string, o options) (exec, network map[string][]time.Duration, err error) {
	call := map[string]func(*client.Client) error{
		"exec": func(c *client.Client) error {
			_, err := c.Exec(ctx, id, api.ExecRequest{Cmd: []string{"true"}})
			return err
		},
		"network": func(c *client.Client) error {
			_, err := c.Network(ctx, id)
			return err
		},
	}
	for _, name := range order { // warm: connections, caches
		for range 10 {
			for what, fn := range call {
				if err := fn(via[name]); err != nil {
					return nil, nil, fmt.Errorf("%s through %s: %w", what, name, err)
				}
			}
		}
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, nil, err
		}
		defer pprof.StopCPUProfile()
	}
	took := map[string]map[string][]time.Duration{"exec": {}, "network": {}}
	for i := range o.n {
		for _, what := range []string{"exec", "network"} {
			for _, name := range turn(order, i) {
				t0 := time.Now()
				if err := call[what](via[name]); err != nil {
					return nil, nil, fmt.Errorf("%s through %s: %w", what, name, err)
				}
				took[what][name] = append(took[what][name], time.Since(t0))
			}
		}
	}
	return took["exec"], took["network"], nil
}

// turn is order for the i-th round, reversed every other round, so that
// neither node's call always follows the other's.
func turn(order []string, i int) []string {
	if i%2 == 0 {
		return order
	}
	r := slices.Clone(order)
	slices.Reverse(r)
	return r
}
