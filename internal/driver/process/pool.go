package process

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/ids"
)

// pool keeps agents started ahead of need: each has its directory and uid
// and has paid for exec and the Go runtime's start, and waits for its
// envelope. Create moves one into place, which saves most of a cold start.
//
// The pool refills once creates have paused for refillDelay: starting an
// agent costs several milliseconds of CPU, and spent during a burst of
// creates it would slow the very creates the pool is there to speed up.
type pool struct {
	d     *Driver
	dir   string // <driver dir>/.warm/<instance>: this driver's own
	ready chan *spawned

	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}
	timer  *time.Timer // debounces refills
}

// refillDelay is how long creates must pause before the pool refills.
const refillDelay = 50 * time.Millisecond

func newPool(d *Driver, size int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{
		d:      d,
		dir:    filepath.Join(d.dir, ".warm", ids.New()),
		ready:  make(chan *spawned, size),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
		kick:   make(chan struct{}, 1),
	}
}

// take returns a warm agent, or nil when none is ready (or the pool is
// off); it starts the filling on first use.
func (p *pool) take() *spawned {
	if cap(p.ready) == 0 {
		return nil
	}
	p.once.Do(func() {
		p.timer = time.AfterFunc(refillDelay, func() {
			select {
			case p.kick <- struct{}{}:
			default:
			}
		})
		go p.fill()
	})
	p.timer.Reset(refillDelay)
	select {
	case sp := <-p.ready:
		return sp
	default:
		return nil
	}
}

// fill keeps the pool full until close.
func (p *pool) fill() {
	defer close(p.done)
	for {
		for len(p.ready) < cap(p.ready) {
			if p.ctx.Err() != nil {
				return
			}
			dir := filepath.Join(p.dir, ids.New())
			if err := os.MkdirAll(dir, 0o711); err != nil {
				p.d.log.Warn("warm pool", "err", err)
				break
			}
			sp, err := p.d.newAgent(dir)
			if err != nil {
				p.d.log.Warn("warm pool", "err", err)
				break
			}
			p.ready <- sp
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.kick:
		}
	}
}

// close stops the filling and removes every warm agent.
func (p *pool) close() {
	p.cancel()
	p.once.Do(func() { close(p.done) })
	<-p.done
	if p.timer != nil {
		p.timer.Stop()
	}
	for {
		select {
		case sp := <-p.ready:
			sp.close()
			p.d.teardown(context.Background(), sp.st)
		default:
			return
		}
	}
}

// sweepWarm removes what the pools of earlier runs left behind. Their
// agents saw their stdin close and exited; anything left is killed.
func (d *Driver) sweepWarm() {
	base := filepath.Join(d.dir, ".warm")
	instances, _ := os.ReadDir(base)
	for _, inst := range instances {
		if filepath.Join(base, inst.Name()) == d.pool.dir {
			continue
		}
		entries, _ := os.ReadDir(filepath.Join(base, inst.Name()))
		for _, e := range entries {
			dir := filepath.Join(base, inst.Name(), e.Name())
			st, err := readState(dir)
			if err != nil {
				st = state{Dir: dir}
			}
			st.Dir = dir
			_ = d.teardown(context.Background(), st)
		}
		_ = os.Remove(filepath.Join(base, inst.Name()))
	}
}
