// Command fleet measures what forwarding between nodes costs: two hutch
// servers, nodes "a" and "b", in this process on one Postgres with one
// cluster key; a sandbox runs on a. It times an exec (`true`, run to
// completion) sent to a, the sandbox's node, against the same sent to b,
// which forwards it to a; and a create (then its destroy) sent to each,
// placement choosing a both ways (the creates ask for its label), so b
// forwards its creates. The target: forwarding adds at most
// 0.5 ms at p50.
//
// The nodes register and heartbeat themselves; node a is labelled
// bench=a, which every create asks for.
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/... ./bench/... && bin/fleet -agent bin/hutch-agent [-store-url postgres://...]
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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

// fleet parses the flags, starts a Postgres when none is given, runs the
// benchmark and returns the exit code.
func fleet() int {
	agent := flag.String("agent", "", "path of hutch-agent (default: beside this binary)")
	storeURL := flag.String("store-url", os.Getenv("HUTCH_STORE_URL"), "the Postgres both nodes share (an empty database; $HUTCH_STORE_URL; default: a throwaway cluster started here with Postgres's durable defaults)")
	n := flag.Int("n", 200, "execs through each node; a quarter as many creates")
	flag.Parse()
	if *storeURL == "" {
		pg, err := pgtemp.Start(pgtemp.Options{Durable: true})
		if err == nil {
			defer pg.Stop()
			*storeURL, err = pg.CreateDatabase("hutch")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet: a Postgres for the two nodes (or -store-url):", err)
			return 1
		}
	}
	if err := run(context.Background(), *agent, *storeURL, *n); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, agent, storeURL string, n int) error {
	if agent == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		agent = filepath.Join(filepath.Dir(exe), "hutch-agent")
	}
	var k [32]byte
	rand.Read(k[:])
	os.Setenv(forward.KeyEnv, hex.EncodeToString(k[:]))
	node := func(name, adminKey string) func(*config.Config) {
		return func(c *config.Config) {
			c.Store, c.StoreURL, c.Node = "postgres", storeURL, name
			c.Driver, c.AgentPath, c.WarmPool = "process", agent, 0
			// Creates ask for bench=a: placement puts them on a whichever
			// node they are sent to.
			c.NodeLabels = map[string]string{"bench": name}
			if adminKey != "" {
				// The store's admin key is a's first start's; b reads it
				// from its own data directory as a's client does.
				os.WriteFile(filepath.Join(c.DataDir, "admin.key"), []byte(adminKey+"\n"), 0o600)
			}
		}
	}
	a, err := benchserver.Start(ctx, node("a", ""))
	if err != nil {
		return fmt.Errorf("node a: %w", err)
	}
	defer a.Stop(ctx)
	b, err := benchserver.Start(ctx, node("b", a.Key))
	if err != nil {
		return fmt.Errorf("node b: %w", err)
	}
	defer b.Stop(ctx)
	sb, err := a.Client.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		return err
	}
	defer a.Client.DeleteSandbox(ctx, sb.ID)
	via := map[string]*client.Client{"a (owner)": a.Client, "b (forwarded)": b.Client}
	order := []string{"a (owner)", "b (forwarded)"}
	exec := map[string][]time.Duration{}
	for _, name := range order { // warm: connections, caches
		for range 10 {
			if _, err := via[name].Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
				return err
			}
		}
	}
	for range n {
		for _, name := range order {
			t0 := time.Now()
			if _, err := via[name].Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
				return fmt.Errorf("exec through %s: %w", name, err)
			}
			exec[name] = append(exec[name], time.Since(t0))
		}
	}
	onA := map[string]string{"bench": "a"}
	create := map[string][]time.Duration{}
	for range max(1, n/4) {
		for _, name := range order {
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
	fmt.Printf("%-42s %10s %10s %10s\n", "", "p50", "p90", "p99")
	for _, what := range []struct {
		name string
		d    map[string][]time.Duration
	}{{"exec `true`", exec}, {"create (process driver)", create}} {
		for _, name := range order {
			d := what.d[name]
			fmt.Printf("%-42s %10s %10s %10s\n", what.name+" via "+name, stat.MS(stat.Pct(d, 50)), stat.MS(stat.Pct(d, 90)), stat.MS(stat.Pct(d, 99)))
		}
		fmt.Printf("%-42s %10s\n", "  forwarding adds (p50)", stat.MS(stat.Pct(what.d[order[1]], 50)-stat.Pct(what.d[order[0]], 50)))
	}
	return nil
}
