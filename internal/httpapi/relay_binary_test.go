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
	"github.com/hutchdev/hutch/internal/sandbox"
)

// relaySandboxes hands out streams of ready-made output, at memory
// speed: count events of chunk each, as the agent sends them, then the
// exit. Only ProcessOutput and ExecStream exist.
type relaySandboxes struct {
	Sandboxes
	chunk []byte
	count int
}

func (s relaySandboxes) ProcessOutput(ctx context.Context, id string, pid int, cursor int64, follow bool) (sandbox.Stream[api.OutputEvent], error) {
	n, off := 0, cursor
	return genStream[api.OutputEvent](func() (api.OutputEvent, error) {
		switch {
		case n < s.count:
			n++
			ev := api.OutputEvent{Type: api.OutputStdout, Offset: off, Data: s.chunk}
			off += int64(len(s.chunk))
			return ev, nil
		case n == s.count:
			n++
			return api.OutputEvent{Type: api.OutputExit, Offset: off, Process: &api.Process{PID: pid}}, nil
		}
		return api.OutputEvent{}, io.EOF
	}), nil
}

func (s relaySandboxes) ExecStream(ctx context.Context, id string, req api.ExecRequest) (sandbox.Stream[api.ExecEvent], error) {
	n := 0
	return genStream[api.ExecEvent](func() (api.ExecEvent, error) {
		switch {
		case n < s.count:
			n++
			return api.ExecEvent{Type: api.ExecStdout, Data: s.chunk}, nil
		case n == s.count:
			n++
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
// of 256 KiB, as the agent sends them, handed over at memory speed,
// relayed by the real handlers over loopback HTTP to the Go client, per
// transport (the exec stream's NDJSON among them). What the client-facing
// side can carry once the agent → control plane leg is not the limit.
func BenchmarkOutputRelay(b *testing.B) {
	const count = 64 // 16 MiB a stream
	sbs := relaySandboxes{chunk: randomBytes(256 << 10), count: count}
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
	size := int64(count * len(sbs.chunk))
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
