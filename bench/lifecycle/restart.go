package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// restartClients is how many execs the restart's check has in flight at
// once: enough that the figure is the server's re-attach, not this
// client's loop.
const restartClients = 16

// restarter stops the server as hutch serve stops on SIGTERM, its
// sandboxes left running, and starts a new one on the same data
// directory; it returns when the new one's start began and its client.
type restarter func(ctx context.Context) (started time.Time, c *client.Client, err error)

// restartResult is what a restart with the fleet alive took.
type restartResult struct {
	n           int           // sandboxes alive across it
	stopped     time.Duration // the old server's shutdown
	apiUp       time.Duration // from the new start to its first answer (info)
	allAnswered time.Duration // from the new start to every sandbox's exec `true` answered
	answered    int
	failures    map[string][]string // error → the sandboxes that failed with it
}

// measureRestart restarts the server with ids alive and times how long
// the new one takes to serve the API and until every sandbox in ids
// answers an exec `true`, restartClients at a time. It returns the new
// server's client.
func measureRestart(ctx context.Context, restart restarter, ids []string) (res restartResult, c *client.Client, err error) {
	res.n = len(ids)
	tk := startTicker(os.Stderr, "restart", len(ids))
	defer tk.finish()
	stopping := time.Now()
	started, c, err := restart(ctx)
	res.stopped = started.Sub(stopping)
	if err != nil {
		return res, nil, err
	}
	if _, err := c.Info(ctx); err != nil {
		return res, c, fmt.Errorf("info after the restart: %w", err)
	}
	res.apiUp = time.Since(started)

	trueCmd := api.ExecRequest{Cmd: []string{"true"}}
	var mu sync.Mutex
	res.failures = map[string][]string{}
	next := make(chan string)
	var wg sync.WaitGroup
	for range restartClients {
		wg.Go(func() {
			for id := range next {
				err := tk.call(func() error {
					r, err := c.Exec(ctx, id, trueCmd)
					if err == nil && r.ExitCode != 0 {
						err = fmt.Errorf("true exited %d", r.ExitCode)
					}
					return err
				})
				mu.Lock()
				if err != nil {
					res.failures[err.Error()] = append(res.failures[err.Error()], id)
				} else {
					res.answered++
				}
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		next <- id
	}
	close(next)
	wg.Wait()
	res.allAnswered = time.Since(started)
	return res, c, ctx.Err()
}

// String reports the restart's figures and every failure by its error.
func (r restartResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Restart with %d sandboxes alive: the old server shut down in %.2f s; the new one served the API %.2f s after its start began, "+
		"and %d of %d sandboxes had answered an exec `true` (%d clients at once) %.2f s after it (target: every one within 10 s).\n",
		r.n, r.stopped.Seconds(), r.apiUp.Seconds(), r.answered, r.n, restartClients, r.allAnswered.Seconds())
	errs := make([]string, 0, len(r.failures))
	for e := range r.failures {
		errs = append(errs, e)
	}
	sort.Slice(errs, func(i, j int) bool { return len(r.failures[errs[i]]) > len(r.failures[errs[j]]) })
	for _, e := range errs {
		ids := r.failures[e]
		fmt.Fprintf(&b, "Not re-attached: %d, e.g. %s: %s\n", len(ids), ids[0], e)
	}
	return b.String()
}
