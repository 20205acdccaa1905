package sandbox

import (
	"context"
	"errors"
	"io"
	"testing"
)

// endless is a stream that always has another event, until closed.
type endless struct{ closed chan struct{} }

func (s *endless) Next() (int, error) {
	select {
	case <-s.closed:
		return 0, errors.New("closed")
	default:
		return 1, nil
	}
}

func (s *endless) Close() error {
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return nil
}

// finite yields n events, then io.EOF or err.
type finite struct {
	n   int
	err error
}

func (s *finite) Next() (int, error) {
	if s.n == 0 {
		if s.err != nil {
			return 0, s.err
		}
		return 0, io.EOF
	}
	s.n--
	return s.n, nil
}

func (s *finite) Close() error { return nil }

// TestPumpStop: a reader that stops taking events stops the pump; its
// goroutine returns though its channel is full and ctx still open.
func TestPumpStop(t *testing.T) {
	p := StartPump[int](context.Background(), &endless{closed: make(chan struct{})}, 2)
	<-p.Events()
	p.Stop() // returns only once the goroutine has
	p.Stop() // and again
}

// TestPumpEnd: Events closes after the last event; Err is nil for the
// stream's end and its error otherwise.
func TestPumpEnd(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		st   *finite
		want error
	}{{&finite{n: 3}, nil}, {&finite{n: 3, err: boom}, boom}} {
		p := StartPump[int](context.Background(), c.st, 1)
		got := 0
		for range p.Events() {
			got++
		}
		if got != 3 || !errors.Is(p.Err(), c.want) || (c.want == nil && p.Err() != nil) {
			t.Errorf("%d events, err %v; want 3, %v", got, p.Err(), c.want)
		}
		p.Stop()
	}
}
