package e2b

import (
	"cmp"
	"context"
	"errors"
	"io"
	"time"

	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// errLast is what a send returns after the stream's last message: the
// stream ends without error.
var errLast = errors.New("last message sent")

// relay is one stream relayed to a client: what a pump reads goes to
// send, and keepalive runs every interval while nothing comes.
type relay[T any] struct {
	every     time.Duration
	send      func(T) error // errLast ends the relay cleanly
	keepalive func() error
	failed    func(error) error // the source's end before send's last (io.EOF) or its error, to return
	ended     func() error      // what to return when ctx ends
}

// run relays what p reads until the source ends, send says it was the
// last, or ctx ends, and stops p.
func (r relay[T]) run(ctx context.Context, p *sandbox.Pump[T]) error {
	defer p.Stop()
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	for {
		select {
		case v, ok := <-p.Events():
			if !ok {
				if ctx.Err() != nil {
					return r.ended()
				}
				return r.failed(cmp.Or(p.Err(), io.EOF))
			}
			if err := r.send(v); err != nil {
				if errors.Is(err, errLast) {
					return nil
				}
				return err
			}
		case <-tick.C:
			if err := r.keepalive(); err != nil {
				return err
			}
		case <-ctx.Done():
			return r.ended()
		}
	}
}
