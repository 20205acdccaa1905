package main

import (
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// rateFloor is the concurrent floor of -creates: bwrapArgs run n times
// from as many clients at once as the creates have, each client starting
// its next as soon as its last exits. A create is a sandbox's namespaces,
// cgroups, network and long-lived agent plus a first exec; a bwrap run is
// the namespaces and one exec alone, so its rate on this host is more than
// creates can reach here, whatever the control plane does.
type rateFloor struct {
	clients, n int
	all        time.Duration
	cpu        time.Duration // user + system time of the n runs
	skipped    string
}

func (f rateFloor) measured() bool { return f.skipped == "" && f.all > 0 }

// perSecond is the floor's runs a second.
func (f rateFloor) perSecond() float64 { return float64(f.n) / f.all.Seconds() }

// measureRateFloor runs bwrapArgs n times from clients goroutines at once
// after one untimed trial.
func measureRateFloor(clients, n int) rateFloor {
	f := rateFloor{clients: clients, n: n}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		f.skipped = "bwrap not found on PATH (bash bench/setup.sh installs it)"
		return f
	}
	if err := runQuiet(exec.Command(path, bwrapArgs...)); err != nil {
		f.skipped = err.Error()
		return f
	}
	var (
		left  atomic.Int64
		cpu   atomic.Int64
		first atomic.Value // string: the first failure
		wg    sync.WaitGroup
	)
	left.Store(int64(n))
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				c := exec.Command(path, bwrapArgs...)
				if err := runQuiet(c); err != nil {
					first.CompareAndSwap(nil, err.Error())
					return
				}
				cpu.Add(int64(c.ProcessState.UserTime() + c.ProcessState.SystemTime()))
			}
		})
	}
	wg.Wait()
	f.all, f.cpu = time.Since(start), time.Duration(cpu.Load())
	if msg, ok := first.Load().(string); ok {
		f.skipped = msg
	}
	return f
}

// String is the floor's line under the creates' rate.
func (f rateFloor) String() string {
	if !f.measured() {
		return fmt.Sprintf("bwrap from %d clients at once: skipped: %s", f.clients, f.skipped)
	}
	return fmt.Sprintf("bwrap `--unshare-all` `true` from %d clients at once, %d runs: %.1f a second, %.1f ms of CPU each (user + system)",
		f.clients, f.n, f.perSecond(), float64(f.cpu.Microseconds())/1000/float64(f.n))
}
