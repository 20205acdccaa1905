package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// concurrentResult is what n creates from several clients at once cost.
type concurrentResult struct {
	clients, n, created int
	createErr           string // the first failure, if any

	create, createExec []time.Duration // each create's answer; each create → its first exec
	all                time.Duration   // first create sent → last first exec answered
	destroyAll         time.Duration
}

// measureConcurrent creates n sandboxes from clients goroutines at once,
// each create followed by a first exec of `true` in the new sandbox; the
// sandboxes are kept alive until every create has ended (the fleet grows
// by n), then destroyed from as many clients, outside the timings. Failed
// creates are counted, not fatal. Whatever it created is destroyed even
// when it fails part-way. profile is as measureAlive's; its phase is
// "concurrent".
func measureConcurrent(ctx context.Context, c *client.Client, clients, n int, profile func(phase string) (stop func())) (res concurrentResult, retErr error) {
	if profile == nil {
		profile = func(string) func() { return func() {} }
	}
	res.clients, res.n = clients, n
	trueCmd := api.ExecRequest{Cmd: []string{"true"}}
	var (
		mu   sync.Mutex
		ids  []string
		next int
	)
	defer func() {
		if retErr != nil {
			destroyAll(ctx, c, ids)
		}
	}()
	// take hands out the index of the next create, false when all are.
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next == n || ctx.Err() != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}

	stop := profile("concurrent")
	tk := startTicker(os.Stderr, fmt.Sprintf("create (%d clients)", clients), n)
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, ok := take(); ok; i, ok = take() {
				t := time.Now()
				var created, firstExec time.Duration
				var id string
				err := tk.call(func() error {
					sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
					if err != nil {
						return fmt.Errorf("create %d: %w", i, err)
					}
					created, id = time.Since(t), sb.ID
					r, err := c.Exec(ctx, sb.ID, trueCmd)
					if err == nil && r.ExitCode != 0 {
						err = fmt.Errorf("true exited %d", r.ExitCode)
					}
					if err != nil {
						return fmt.Errorf("first exec in %s: %w", sb.ID, err)
					}
					firstExec = time.Since(t)
					return nil
				})
				mu.Lock()
				if id != "" {
					ids = append(ids, id)
				}
				if err != nil {
					if res.createErr == "" {
						res.createErr = err.Error()
					}
				} else {
					res.create = append(res.create, created)
					res.createExec = append(res.createExec, firstExec)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.all = time.Since(start)
	tk.finish()
	stop()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	res.created = len(res.create)

	start = time.Now()
	tk = startTicker(os.Stderr, "destroy", len(ids))
	work := make(chan string)
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				if err := tk.call(func() error { return c.DeleteSandbox(ctx, id) }); err != nil {
					select {
					case errs <- fmt.Errorf("destroy %s: %w", id, err):
					default:
					}
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	tk.finish()
	res.destroyAll = time.Since(start)
	select {
	case err := <-errs:
		return res, err
	default:
	}
	return res, nil
}

// printConcurrent prints the concurrency part: the rate of creates from
// several clients at once against bwrap's from as many (rf), and their
// latencies.
func printConcurrent(r concurrentResult, fl floors, rf rateFloor) {
	rate := float64(r.created) / r.all.Seconds()
	fmt.Printf("### %d creates from %d clients at once\n", r.n, r.clients)
	fmt.Printf("Created %d of %d in %.2f s (each with its first exec): %.1f creates/s; destroyed from %d clients in %.2f s.\n",
		r.created, r.n, r.all.Seconds(), rate, r.clients, r.destroyAll.Seconds())
	fmt.Println(rf)
	if rf.measured() {
		fmt.Printf("Creates a second / bwrap runs a second from as many clients: %.2f\n", rate/rf.perSecond())
	}
	if r.createErr != "" {
		fmt.Println("First failure:", r.createErr)
	}
	fmt.Println()
	fmt.Println("| what | n | p50 | p95 | p99 | p50 / bwrap p50 |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{{"create (API answers 201)", r.create}, {"create → first exec returns", r.createExec}} {
		b := "-"
		if fl.bwrap.measured() {
			b = ratio(pct(row.d, 50), pct(fl.bwrap.runs, 50))
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", row.name, len(row.d), ms(pct(row.d, 50)), ms(pct(row.d, 95)), ms(pct(row.d, 99)), b)
	}
	fmt.Println()
}
