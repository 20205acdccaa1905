package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestLargeOutputIntact: output of several MiB, read at pipe speed
// through every path whose buffers go back to their stream to be read
// into again (sandbox.Recycle), arrives byte for byte: no buffer is
// reused while a reader or writer still holds it.
func TestLargeOutputIntact(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	const lines = 600000
	var want bytes.Buffer
	for i := 1; i <= lines; i++ {
		fmt.Fprintln(&want, i)
	}
	cmd := fmt.Sprintf("seq 1 %d", lines)

	t.Run("exec frames", func(t *testing.T) {
		st, err := f.ca.ExecStream(f.ctx, id, api.ExecRequest{Cmd: []string{"sh", "-c", cmd}})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var got []byte
		for {
			ev, err := st.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == api.ExecExit {
				break
			}
			got = append(got, ev.Data...)
			st.Recycle(ev.Data)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("got %d bytes, want %d; first difference at %d", len(got), want.Len(), firstDiff(got, want.Bytes()))
		}
	})

	t.Run("exec NDJSON", func(t *testing.T) {
		req, err := http.NewRequest("POST", f.srv.URL+"/v1/sandboxes/"+id+"/exec/stream", strings.NewReader(`{"cmd":["sh","-c","`+cmd+`"]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+f.keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		var got []byte
		for {
			var ev api.ExecEvent
			if err := dec.Decode(&ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type == api.ExecExit {
				break
			}
			got = append(got, ev.Data...)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("got %d bytes, want %d; first difference at %d", len(got), want.Len(), firstDiff(got, want.Bytes()))
		}
	})

	t.Run("exec", func(t *testing.T) {
		res, err := f.ca.Exec(f.ctx, id, api.ExecRequest{Cmd: []string{"sh", "-c", cmd}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.StdoutTruncated || !strings.HasPrefix(want.String(), res.Stdout) || len(res.Stdout) < 1<<20-3 {
			t.Fatalf("truncated %v, %d bytes of stdout, a prefix of the output: %v", res.StdoutTruncated, len(res.Stdout), strings.HasPrefix(want.String(), res.Stdout))
		}
	})

	for _, tr := range transports {
		t.Run("output "+tr.name, func(t *testing.T) {
			p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", cmd}})
			if err != nil {
				t.Fatal(err)
			}
			_, _, dropped, evs := readOutput(t, f, id, p.PID, 0, tr.t)
			var n int64
			for _, ev := range evs {
				if ev.Type != api.OutputStdout {
					continue
				}
				if end := ev.Offset + int64(len(ev.Data)); end > int64(want.Len()) || !bytes.Equal(ev.Data, want.Bytes()[ev.Offset:end]) {
					t.Fatalf("the %d bytes at offset %d are not the output's", len(ev.Data), ev.Offset)
				}
				n += int64(len(ev.Data))
			}
			if n+dropped != int64(want.Len()) {
				t.Fatalf("%d delivered + %d dropped, want %d", n, dropped, want.Len())
			}
		})
	}

	t.Run("output websocket, client recycling", func(t *testing.T) {
		p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", cmd}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.ca.ProcessOutputOver(f.ctx, id, p.PID, 0, true, client.OutputWebSocket)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var n, dropped int64
		for {
			ev, err := st.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == api.OutputExit {
				break
			}
			dropped += ev.Dropped
			if end := ev.Offset + int64(len(ev.Data)); end > int64(want.Len()) || !bytes.Equal(ev.Data, want.Bytes()[ev.Offset:end]) {
				t.Fatalf("the %d bytes at offset %d are not the output's", len(ev.Data), ev.Offset)
			}
			n += int64(len(ev.Data))
			st.Recycle(ev.Data)
		}
		if n+dropped != int64(want.Len()) {
			t.Fatalf("%d delivered + %d dropped, want %d", n, dropped, want.Len())
		}
	})
}

// firstDiff is the first index where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
