package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// result is one load run: requests completed in the window and each one's
// latency.
type result struct {
	n       int
	errors  int
	elapsed time.Duration
	lat     []time.Duration
	cpu     cpuUse // spent in the window, by each party
}

func (r result) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

// pct is the p-th percentile latency.
func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(p/100*float64(len(r.lat))))]
}

// perReq is the CPU spent per request completed.
func (r result) perReq(d time.Duration) time.Duration {
	if r.n == 0 {
		return 0
	}
	return d / time.Duration(r.n)
}

// load keeps conns keep-alive connections to dial busy with GET url (Host:
// host when set) for d, after a warm-up of a second, and returns what the
// window saw, with the CPU each of who spent in it. Every connection goes
// to addr.
func load(ctx context.Context, addr, url, host string, hdr http.Header, conns int, d time.Duration, who parties) (result, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		},
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	one := func() error {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return err
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := cl.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		return err
	}
	if err := one(); err != nil {
		return result{}, fmt.Errorf("first request: %w", err)
	}
	var (
		mu    sync.Mutex
		res   result
		wg    sync.WaitGroup
		start = time.Now()
		warm  = start.Add(time.Second)
		end   = warm.Add(d)
		cpu   = make(chan cpuUse, 1)
	)
	go func() {
		time.Sleep(time.Until(warm))
		c0 := who.sample()
		time.Sleep(time.Until(end))
		cpu <- who.sample().sub(c0)
	}()
	for range conns {
		wg.Go(func() {
			var lat []time.Duration
			var n, errs int
			for {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				err := one()
				t1 := time.Now()
				if t0.Before(warm) || t1.After(end) {
					continue
				}
				if err != nil {
					errs++
					continue
				}
				n++
				lat = append(lat, t1.Sub(t0))
			}
			mu.Lock()
			res.n += n
			res.errors += errs
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = d
	res.cpu = <-cpu
	slices.Sort(res.lat)
	return res, nil
}
