package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// relaySandboxes hands out streams of ready-made output, at memory
// speed, then the exit: size bytes in events of the sizes the agent
// sends, 256 KiB of a process's output, 32 KiB of a command's. Only
// ProcessOutput and ExecStream exist.
type relaySandboxes struct {
	Sandboxes
	data []byte
}

const (
	relayOutputEvent = 256 << 10
	relayExecEvent   = 32 << 10
)

func (s relaySandboxes) ProcessOutput(ctx context.Context, id string, pid int, cursor int64, follow bool) (sandbox.Stream[api.OutputEvent], error) {
	rest, off, done := s.data, cursor, false
	return genStream[api.OutputEvent](func() (api.OutputEvent, error) {
		switch {
		case len(rest) > 0:
			n := min(len(rest), relayOutputEvent)
			ev := api.OutputEvent{Type: api.OutputStdout, Offset: off, Data: rest[:n]}
			rest, off = rest[n:], off+int64(n)
			return ev, nil
		case !done:
			done = true
			return api.OutputEvent{Type: api.OutputExit, Offset: off, Process: &api.Process{PID: pid}}, nil
		}
		return api.OutputEvent{}, io.EOF
	}), nil
}

func (s relaySandboxes) ExecStream(ctx context.Context, id string, req api.ExecRequest) (sandbox.Stream[api.ExecEvent], error) {
	rest, done := s.data, false
	return genStream[api.ExecEvent](func() (api.ExecEvent, error) {
		switch {
		case len(rest) > 0:
			n := min(len(rest), relayExecEvent)
			ev := api.ExecEvent{Type: api.ExecStdout, Data: rest[:n]}
			rest = rest[n:]
			return ev, nil
		case !done:
			done = true
			return api.ExecEvent{Type: api.ExecExit, Exit: &api.ExecResult{}}, nil
		}
		return api.ExecEvent{}, io.EOF
	}), nil
}

// genStream is a sandbox.Stream of a function's results.
type genStream[T any] func() (T, error)

func (f genStream[T]) Next() (T, error) { return f() }
func (f genStream[T]) Close() error     { return nil }

// BenchmarkOutputRelay measures the API's half of streamed output: events
// of the sizes the agent sends, handed over at memory speed,
// relayed by the real handlers over loopback HTTP to the Go client, per
// transport (the exec stream's NDJSON among them). What the client-facing
// side can carry once the agent → control plane leg is not the limit.
func BenchmarkOutputRelay(b *testing.B) {
	sbs := relaySandboxes{data: randomBytes(16 << 20)}
	a := &API{cfg: Config{Sandboxes: sbs, Log: slog.New(slog.DiscardHandler), MaxBodyBytes: 1 << 20}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.SetPathValue("id", "sb")
		r.SetPathValue("pid", "1")
		if r.Method == http.MethodPost {
			a.execStream(w, r)
			return
		}
		a.processOutput(w, r)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "")
	ctx := context.Background()
	size := int64(len(sbs.data))
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				st, err := c.ProcessOutputOver(ctx, "sb", 1, 0, true, tr.t)
				if err != nil {
					b.Fatal(err)
				}
				var got int64
				for {
					ev, err := st.Next()
					if err != nil {
						b.Fatal(err)
					}
					got += int64(len(ev.Data))
					if ev.Type == api.OutputExit {
						break
					}
				}
				st.Close()
				if got != size {
					b.Fatalf("%d bytes, want %d", got, size)
				}
			}
		})
	}
	b.Run("exec-ndjson", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			st, err := c.ExecStream(ctx, "sb", api.ExecRequest{Cmd: []string{"x"}})
			if err != nil {
				b.Fatal(err)
			}
			var got int64
			for {
				ev, err := st.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				got += int64(len(ev.Data))
			}
			st.Close()
			if got != size {
				b.Fatalf("%d bytes, want %d", got, size)
			}
		}
	})
}
