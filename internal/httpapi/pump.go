package httpapi

import (
	"context"
	"errors"
	"io"

	"github.com/hutchdev/hutch/internal/sandbox"
)

// pump reads a sandbox stream on a goroutine of its own into a channel, so
// a handler can wait on the stream, a heartbeat and its client together.
// The goroutine ends when the stream ends or fails, or when ctx ends
// (the handler returned, the client left or the server drains), whichever
// comes first: the handler's deferred cancel and the stream's Close make
// sure of it, so an abandoned stream leaks nothing. The channel closes
// after the last event; err then says why (nil for the stream's end).
//
// The pump reads a few events ahead (pumpAhead) while the handler writes,
// so reading from the agent and writing to the client overlap; a handler
// takes what is already there with ready, to write it in one go.
type pump[T any] struct {
	events chan T
	err    error
}

// pumpAhead is how many events a pump holds that the handler has not
// taken: enough to overlap reading and writing, few enough that a slow
// client holds little (an output event carries at most a few hundred KiB).
const pumpAhead = 4

func startPump[T any](ctx context.Context, st sandbox.Stream[T]) *pump[T] {
	p := &pump[T]{events: make(chan T, pumpAhead)}
	go func() {
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
			}
		}
	}()
	return p
}

// ready returns an event the pump has already read, without waiting; false
// when there is none yet or the stream has ended (the next receive from
// events tells which).
func (p *pump[T]) ready() (T, bool) {
	select {
	case ev, ok := <-p.events:
		return ev, ok
	default:
		var zero T
		return zero, false
	}
}
