package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/bench/internal/benchserver"
	"github.com/hutchdev/hutch/client"
)

// creates measures creates/s: o.clients concurrent clients create and
// destroy o.creates sandboxes with no labels, first through a and b
// (client i sends to a when i is even, b when odd; placement spreads the
// sandboxes), then through a alone, b drained so that placement chooses
// a. (Drained first, b would refuse creates until its next heartbeat
// told it it was active again.)
func creates(ctx context.Context, a, b *benchserver.Server, o options) error {
	two, err := throughput(ctx, []string{a.Addr(), b.Addr()}, a.Key, o)
	if err != nil {
		return fmt.Errorf("creates through a and b: %w", err)
	}
	if _, err := a.Client.DrainNode(ctx, "b", time.Hour); err != nil {
		return fmt.Errorf("drain b: %w", err)
	}
	one, err := throughput(ctx, []string{a.Addr()}, a.Key, o)
	if err != nil {
		return fmt.Errorf("creates through a alone: %w", err)
	}
	fmt.Printf("\ncreates/s, %d sandboxes created then destroyed by %d clients, no labels\n", o.creates, o.clients)
	for _, r := range []struct {
		name string
		t    rate
	}{{"one node (a; b drained)", one}, {"two nodes (a and b)", two}} {
		fmt.Printf("%-48s %8.1f creates/s  (%.2f s; placed: a %d, b %d)\n", r.name, r.t.perSecond(), r.t.took.Seconds(), r.t.on["a"], r.t.on["b"])
	}
	return nil
}

// rate is one throughput run: how long o.creates took and where they
// were placed.
type rate struct {
	n    int
	took time.Duration
	on   map[string]int
}

func (r rate) perSecond() float64 { return float64(r.n) / r.took.Seconds() }

// throughput runs o.creates creates and destroys from o.clients clients,
// client i sending both to addrs[i%len(addrs)] as the admin key.
func throughput(ctx context.Context, addrs []string, key string, o options) (rate, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}}
	defer hc.CloseIdleConnections()
	var (
		left = int64(o.creates)
		mu   sync.Mutex
		on   = map[string]int{}
		wg   sync.WaitGroup
	)
	t0 := time.Now()
	for i := range o.clients {
		c := client.New("http://"+addrs[i%len(addrs)], key, client.WithHTTPClient(hc))
		wg.Go(func() {
			for atomic.AddInt64(&left, -1) >= 0 && ctx.Err() == nil {
				sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
				if err == nil {
					mu.Lock()
					on[sb.Node]++
					mu.Unlock()
					err = c.DeleteSandbox(ctx, sb.ID)
				}
				if err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return rate{}, err
	}
	return rate{n: o.creates, took: time.Since(t0), on: on}, nil
}
