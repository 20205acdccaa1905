// Package warm keeps sandboxes started ahead of need for a driver: each
// has paid for exec and the agent's start and waits for its envelope, so a
// create only moves one into place.
//
// A pool refills once creates have paused for RefillDelay: starting an
// agent costs several milliseconds of CPU, and spent during a burst of
// creates it would slow the very creates the pool is there to speed up.
//
// A warm item is replaced once it is MaxAge old. A namespace-driver
// sandbox waits in a copy of the host's mount table taken when it was
// started, which holds every filesystem mounted then: the operator's
// unmount of a disk leaves the device busy for as long as the copy
// lives. Replacing warm items bounds that to MaxAge.
package warm

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hutchdev/hutch/internal/base/ids"
)

// RefillDelay is how long creates must pause before a pool refills.
const RefillDelay = 50 * time.Millisecond

// MaxAge is how long an item waits before it is replaced.
const MaxAge = time.Minute

// item is a warm item and when it was made.
type item[T any] struct {
	v    T
	born time.Time
}

// Pool holds up to size warm items of type T. Each lives in its own
// directory under Dir until a create takes it.
type Pool[T any] struct {
	dir     string
	mode    os.FileMode // of the pool's directories above the items
	maxAge  time.Duration
	ready   chan item[T]
	make    func(dir string) (T, error)
	discard func(T)
	log     *slog.Logger

	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}
	timer  *time.Timer // debounces refills
}

// New returns a pool whose items live under base/<instance>/. build makes
// one item in the directory it is given (which exists, mode 0711); discard
// removes one. mode is that of base and base/<instance>: 0700 unless the
// items' sandboxes must reach their directories by path. Nothing starts
// until the first Take.
func New[T any](base string, mode os.FileMode, size int, build func(dir string) (T, error), discard func(T), log *slog.Logger) *Pool[T] {
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool[T]{
		dir:     filepath.Join(base, ids.New()),
		mode:    mode,
		maxAge:  MaxAge,
		ready:   make(chan item[T], size),
		make:    build,
		discard: discard,
		log:     log,
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
	}
}

// WithMaxAge sets how long an item waits before it is replaced (MaxAge
// unless set), before the first Take: a driver whose items hold nothing
// of the host's waits longer.
func (p *Pool[T]) WithMaxAge(d time.Duration) *Pool[T] {
	p.maxAge = d
	return p
}

// Dir is this pool's own directory.
func (p *Pool[T]) Dir() string { return p.dir }

// Take returns a warm item, or false when none is ready (or the pool is
// off); the first call starts the filling.
func (p *Pool[T]) Take() (T, bool) {
	var zero T
	if cap(p.ready) == 0 {
		return zero, false
	}
	p.once.Do(func() {
		p.timer = time.AfterFunc(RefillDelay, func() {
			select {
			case p.kick <- struct{}{}:
			default:
			}
		})
		go p.fill()
	})
	p.timer.Reset(RefillDelay)
	select {
	case it := <-p.ready:
		return it.v, true
	default:
		return zero, false
	}
}

// fill keeps the pool full, and its items younger than maxAge, until
// Close.
func (p *Pool[T]) fill() {
	defer close(p.done)
	age := time.NewTicker(p.maxAge / 2)
	defer age.Stop()
	for {
		for len(p.ready) < cap(p.ready) {
			if p.ctx.Err() != nil {
				return
			}
			dir := filepath.Join(p.dir, ids.New())
			if err := mkdirs(p.dir, p.mode, dir); err != nil {
				p.log.Warn("warm pool", "err", err)
				break
			}
			it, err := p.make(dir)
			if err != nil {
				p.log.Warn("warm pool", "err", err)
				break
			}
			p.ready <- item[T]{v: it, born: time.Now()}
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.kick:
		case <-age.C:
			p.retire()
		}
	}
}

// retire discards the items older than maxAge; the loop that calls it
// then makes new ones. Only that loop puts items in, so one taken out and
// kept goes back without waiting.
func (p *Pool[T]) retire() {
	for range len(p.ready) {
		select {
		case it := <-p.ready:
			if time.Since(it.born) < p.maxAge {
				p.ready <- it
				continue
			}
			p.discard(it.v)
		default:
			return // creates took the rest
		}
	}
}

// Close stops the filling and discards every warm item.
func (p *Pool[T]) Close() {
	p.cancel()
	p.once.Do(func() { close(p.done) })
	<-p.done
	if p.timer != nil {
		p.timer.Stop()
	}
	for {
		select {
		case it := <-p.ready:
			p.discard(it.v)
		default:
			os.Remove(p.dir)
			return
		}
	}
}

// SweepOthers tears down what the pools of earlier runs left under base
// (every instance directory but keep): teardown gets each item's
// directory.
func SweepOthers(base, keep string, teardown func(dir string)) {
	instances, _ := os.ReadDir(base)
	for _, inst := range instances {
		instDir := filepath.Join(base, inst.Name())
		if instDir == keep {
			continue
		}
		entries, _ := os.ReadDir(instDir)
		for _, e := range entries {
			teardown(filepath.Join(instDir, e.Name()))
		}
		_ = os.Remove(instDir)
	}
}

// mkdirs makes parent (with its own parent) with mode, then item in it,
// 0711: the sandbox's root inside, or its uid, enters its own directory.
func mkdirs(parent string, mode os.FileMode, item string) error {
	for _, p := range []string{filepath.Dir(parent), parent} {
		if err := os.Mkdir(p, mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return os.Mkdir(item, 0o711)
}
