package sandbox

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Observer is told how the service's work went, for the server's metrics
// (internal/edge/telemetry). Its methods are called on the paths they measure,
// from any goroutine, and must return at once. Config.Observer nil
// observes nothing.
type Observer interface {
	// ObserveCreate: a create (a fork's or a restore's too) that reached
	// its driver ended after d; err is nil when the sandbox runs.
	ObserveCreate(driver string, d time.Duration, err error)
	// ObserveExec: a command sent to its sandbox's agent ended, or failed
	// to start, after d, as its caller saw it (a run-to-completion exec
	// and a streamed one alike, the command's own run time included); err
	// is nil when its exit was seen, whatever its exit code, and
	// context.Canceled when the caller left first. A command the door
	// refused (no such sandbox, not running, too many calls) is not one.
	ObserveExec(driver string, d time.Duration, err error)
	// ObserveCall: a call through the door (op is one of the door's fixed
	// names: "exec", "files.read"…) ended; err is what its caller got, so
	// errdefs.ErrUnavailable is an agent that did not answer, not one
	// whose sandbox was stopped under the call. A stream ends without
	// error when closed.
	ObserveCall(op string, err error)
}

// observer tells the Observer, when there is one.
type observer struct {
	o Observer
}

func (ob observer) create(driver string, start time.Time, err error) {
	if ob.o != nil {
		ob.o.ObserveCreate(driver, time.Since(start), err)
	}
}

func (ob observer) call(op string, err error) {
	if ob.o == nil {
		return
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	ob.o.ObserveCall(op, err)
}

// exec reports a command that failed to start through the door.
func (ob observer) exec(driver string, start time.Time, err error) {
	if ob.o != nil {
		ob.o.ObserveExec(driver, time.Since(start), err)
	}
}

// observedExec reports a started command when its stream closes: how
// long it ran and how it ended.
func (ob observer) observedExec(driver string, start time.Time, st Stream[api.ExecEvent]) Stream[api.ExecEvent] {
	if ob.o == nil {
		return st
	}
	return &execObserved{Stream: st, obs: ob.o, driver: driver, start: start}
}

// execObserved is an exec stream that remembers how its command ended.
type execObserved struct {
	Stream[api.ExecEvent]
	obs    Observer
	driver string
	start  time.Time

	mu       sync.Mutex // Close may come while Next waits
	ended    bool       // the exit event or an error came
	err      error      // the error that came first
	observed bool       // Close reported it
}

func (e *execObserved) Recycle(b []byte) { Recycle(e.Stream, b) }

func (e *execObserved) Next() (api.ExecEvent, error) {
	ev, err := e.Stream.Next()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.ended:
	case errors.Is(err, io.EOF): // the agent ended the stream before the exit
		e.ended, e.err = true, errdefs.ErrUnavailable
	case err != nil:
		e.ended, e.err = true, err
	case ev.Type == api.ExecExit:
		e.ended = true
	}
	return ev, err
}

// Close reports the command before closing its stream, so what a Next
// still waiting sees of the close is not taken for how it ended.
func (e *execObserved) Close() error {
	e.mu.Lock()
	if !e.observed {
		e.observed = true
		outcome := e.err
		if !e.ended {
			outcome = context.Canceled
		}
		e.obs.ObserveExec(e.driver, time.Since(e.start), outcome)
	}
	e.mu.Unlock()
	return e.Stream.Close()
}
