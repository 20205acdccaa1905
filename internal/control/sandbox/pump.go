package sandbox

import (
	"context"
	"errors"
	"io"
	"sync"
)

// Pump reads a Stream on a goroutine of its own into a channel, so its
// reader can wait on the stream, a heartbeat and its client together. It
// reads up to ahead events its reader has not taken, so reading from the
// agent and writing to a client overlap; Ready takes what is already
// there, to write it in one go.
//
// The goroutine ends when the stream ends or fails, or when ctx ends,
// whichever comes first: a handler's deferred cancel and the stream's
// Close make sure of it, so an abandoned stream leaks nothing. Events is
// closed after the last event, and Err then says why. A reader that must
// know the goroutine is gone before it returns calls Stop.
type Pump[T any] struct {
	events chan T
	err    error
	st     Stream[T]
	quit   chan struct{}
	stop   sync.Once
	done   chan struct{}
}

// StartPump starts reading st.
func StartPump[T any](ctx context.Context, st Stream[T], ahead int) *Pump[T] {
	p := &Pump[T]{events: make(chan T, ahead), st: st, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer close(p.events)
		for {
			ev, err := st.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					p.err = err
				}
				return
			}
			select {
			case p.events <- ev:
			case <-ctx.Done():
				return
			case <-p.quit:
				return
			}
		}
	}()
	return p
}

// Events are the stream's events, closed after the last.
func (p *Pump[T]) Events() <-chan T { return p.events }

// Err is why the stream ended, once Events is closed: nil for its end
// (io.EOF) or ctx's, the stream's error otherwise.
func (p *Pump[T]) Err() error { return p.err }

// Ready returns an event the pump has already read, without waiting;
// false when there is none yet or the stream has ended (the next receive
// from Events tells which).
func (p *Pump[T]) Ready() (T, bool) {
	select {
	case ev, ok := <-p.events:
		return ev, ok
	default:
		var zero T
		return zero, false
	}
}

// Recycle hands an event's Data back to the stream (sandbox.Recycle).
func (p *Pump[T]) Recycle(b []byte) { Recycle(p.st, b) }

// Stop closes the stream, which ends a read in progress, and waits until
// the pump's goroutine has returned.
func (p *Pump[T]) Stop() {
	p.stop.Do(func() { close(p.quit) })
	p.st.Close()
	<-p.done
}
