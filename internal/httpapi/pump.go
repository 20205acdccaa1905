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
type pump[T any] struct {
	events chan T
	err    error
}

func startPump[T any](ctx context.Context, st sandbox.Stream[T]) *pump[T] {
	p := &pump[T]{events: make(chan T)}
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
