// Command apps measures promotion under load: clients request an app's
// live host without pause while its dev sandbox is promoted (and rolled
// back) again and again; it reports how long the pointer swap takes, how
// long a whole promotion takes, the longest any request took while a swap
// happened against the same load's p99 without one, and every request that
// failed. It starts its own hutch server on loopback, in this process.
//
//	CGO_ENABLED=0 go build -o bin/ ./cmd/... ./bench/... && bin/apps -agent bin/hutch-agent
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/bench/internal/stat"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/server/config"
)

func main() {
	agent := flag.String("agent", "", "path of hutch-agent (default: beside this binary)")
	rounds := flag.Int("n", 10, "promotions, each followed by a rollback")
	clients := flag.Int("clients", 8, "clients requesting the live host without pause")
	flag.Parse()
	if err := run(context.Background(), *agent, *rounds, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "apps:", err)
		os.Exit(1)
	}
}

// sample is one request of the load.
type sample struct {
	start, end time.Time
	err        error
}

func run(ctx context.Context, agent string, rounds, clients int) error {
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
	app, err := c.CreateApp(ctx, api.CreateAppRequest{Name: "bench", Preset: "static", Public: true})
	if err != nil {
		return err
	}
	defer c.DeleteApp(context.WithoutCancel(ctx), app.ID) // its sandboxes with it
	for app.State == api.AppCreating {
		time.Sleep(200 * time.Millisecond)
		if app, err = c.App(ctx, app.ID); err != nil {
			return err
		}
	}
	if app.State != api.AppReady {
		return fmt.Errorf("app %s: %s", app.State, app.Error)
	}
	for id, v := range map[string]string{app.Live: "v1", app.Dev: "v2"} {
		if _, err := c.WriteFile(ctx, id, "/workspace/public/version.txt", 0o644, strings.NewReader(v)); err != nil {
			return err
		}
	}
	fmt.Println("## apps: promotion under load (namespace driver, static preset)")
	fmt.Println()

	// The load: each client requests /version.txt on the live host, one
	// request after another, over its own kept-alive connection.
	// Go's resolver does not send *.localhost to the loopback as browsers
	// do: every connection goes to the server's own address.
	host := app.URL
	u, err := url.Parse(app.URL)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", u.Port())
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var (
		mu      sync.Mutex
		samples []sample
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for !stop.Load() {
				s := sample{start: time.Now()}
				resp, err := hc.Get(host + "version.txt")
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || (string(b) != "v1" && string(b) != "v2") {
						err = fmt.Errorf("%s: %q", resp.Status, b)
					}
				}
				s.end, s.err = time.Now(), err
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		})
	}
	time.Sleep(2 * time.Second) // the load's own baseline
	var swaps, promotes []time.Duration
	var windows [][2]time.Time // each promotion's and rollback's swap, as the client saw the call
	for range rounds {
		t0 := time.Now()
		res, err := c.Promote(ctx, app.ID)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			return fmt.Errorf("promote: %w", err)
		}
		promotes = append(promotes, time.Since(t0))
		swap, err := lastSwap(ctx, c, app.ID)
		if err != nil {
			return err
		}
		swaps = append(swaps, swap)
		windows = append(windows, [2]time.Time{t0, time.Now()})
		if err := serves(hc, host, "v2"); err != nil {
			return fmt.Errorf("after promotion %s: %w", res.App.Live, err)
		}
		time.Sleep(500 * time.Millisecond)
		t1 := time.Now()
		if _, err := c.Rollback(ctx, app.ID); err != nil {
			return fmt.Errorf("rollback: %w", err)
		}
		windows = append(windows, [2]time.Time{t1, time.Now()})
		if err := serves(hc, host, "v1"); err != nil {
			return fmt.Errorf("after rollback: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	var during, outside []time.Duration
	failed := 0
	var firstErr error
	for _, s := range samples {
		if s.err != nil {
			failed++
			if firstErr == nil {
				firstErr = s.err
			}
			continue
		}
		d := s.end.Sub(s.start)
		if overlaps(s, windows) {
			during = append(during, d)
		} else {
			outside = append(outside, d)
		}
	}
	fmt.Printf("| what | figure |\n|---|---|\n")
	fmt.Printf("| pointer swap (store write + router cache), p50 / max of %d | %s / %s |\n", len(swaps), stat.MS(stat.Pct(swaps, 50)), stat.MS(stat.Pct(swaps, 100)))
	fmt.Printf("| whole promotion (checks, fork, candidate up, snapshot, swap), p50 / max | %s / %s |\n", stat.MS(stat.Pct(promotes, 50)), stat.MS(stat.Pct(promotes, 100)))
	fmt.Printf("| requests: total / failed | %d / %d |\n", len(samples), failed)
	fmt.Printf("| request latency outside swaps, p50 / p99 / max | %s / %s / %s |\n", stat.MS(stat.Pct(outside, 50)), stat.MS(stat.Pct(outside, 99)), stat.MS(stat.Pct(outside, 100)))
	fmt.Printf("| request latency during promotions and rollbacks, p50 / p99 / max (the longest stall) | %s / %s / %s |\n",
		stat.MS(stat.Pct(during, 50)), stat.MS(stat.Pct(during, 99)), stat.MS(stat.Pct(during, 100)))
	fmt.Println()
	if firstErr != nil {
		return fmt.Errorf("%d requests failed, the first: %w", failed, firstErr)
	}
	return nil
}

// serves checks that the next request to the live host gets version want.
func serves(hc *http.Client, host, want string) error {
	resp, err := hc.Get(host + "version.txt")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != want {
		return fmt.Errorf("the next request got %q, want %q", b, want)
	}
	return nil
}

// overlaps reports whether s ran while any window was open.
func overlaps(s sample, windows [][2]time.Time) bool {
	for _, w := range windows {
		if s.start.Before(w[1]) && s.end.After(w[0]) {
			return true
		}
	}
	return false
}

// lastSwap is the swap time the last app.promoted event recorded.
func lastSwap(ctx context.Context, c *client.Client, appID string) (time.Duration, error) {
	evs, err := c.AppEvents(ctx, appID, client.EventQuery{Types: []string{api.EventAppPromoted}, Limit: 1000})
	if err != nil {
		return 0, err
	}
	if len(evs.Events) == 0 {
		return 0, errors.New("no app.promoted event")
	}
	us, _ := evs.Events[len(evs.Events)-1].Data["swap_us"].(float64)
	return time.Duration(us) * time.Microsecond, nil
}
