package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

var transports = []struct {
	name string
	t    client.OutputTransport
}{{"sse", client.OutputSSE}, {"websocket", client.OutputWebSocket}, {"websocket-json", client.OutputWebSocketJSON}}

// read follows a process's output from cursor until its exit event and
// returns what each stream carried, the bytes dropped and the events,
// checking every event's offset against the bytes before it.
func readOutput(t *testing.T, f *apiFixture, id string, pid int, cursor int64, tr client.OutputTransport) (stdout, stderr []byte, dropped int64, evs []api.OutputEvent) {
	t.Helper()
	st, err := f.ca.ProcessOutputOver(f.ctx, id, pid, cursor, true, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pos := cursor
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream ended before the exit event: %v", err)
		}
		evs = append(evs, ev)
		switch ev.Type {
		case api.OutputStdout, api.OutputStderr:
			if ev.Offset != pos {
				t.Fatalf("%s event at offset %d, want %d", ev.Type, ev.Offset, pos)
			}
			if ev.Type == api.OutputStdout {
				stdout = append(stdout, ev.Data...)
			} else {
				stderr = append(stderr, ev.Data...)
			}
			pos += int64(len(ev.Data))
		case api.OutputDropped:
			if ev.Offset != pos+ev.Dropped {
				t.Fatalf("dropped %d at %d: resumes at %d, want %d", ev.Dropped, pos, ev.Offset, pos+ev.Dropped)
			}
			dropped += ev.Dropped
			pos = ev.Offset
		case api.OutputExit:
			if ev.Offset != pos || ev.Process == nil || st.Cursor() != pos {
				t.Fatalf("exit event %+v (cursor %d), want offset %d and the process", ev, st.Cursor(), pos)
			}
			if _, err := st.Next(); err == nil {
				t.Fatal("an event after the exit event")
			}
			return stdout, stderr, dropped, evs
		default:
			t.Fatalf("event of type %q", ev.Type)
		}
		if st.Cursor() != pos {
			t.Fatalf("cursor %d after an event ending at %d", st.Cursor(), pos)
		}
	}
}

// startAndWait starts cmd as a background process and waits for its exit.
func startAndWait(t *testing.T, f *apiFixture, id, cmd string) api.Process {
	t.Helper()
	p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", cmd}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := f.ca.WaitProcess(f.ctx, id, p.PID, time.Minute)
	if err != nil || done.Running {
		t.Fatalf("wait = %+v, %v", done, err)
	}
	return done
}

// TestProcessOutputTransports: every transport carries a process's output
// byte for byte, with the right offsets, from any cursor.
func TestProcessOutputTransports(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	big, all := randomBytes(600<<10), allBytes()
	if _, err := f.ca.WriteFile(f.ctx, id, "big.bin", 0, bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ca.WriteFile(f.ctx, id, "all.bin", 0, bytes.NewReader(all)); err != nil {
		t.Fatal(err)
	}
	p := startAndWait(t, f, id, `cat big.bin; printf '\377e' >&2; cat all.bin`)
	// Output is numbered stdout and stderr together, in the order the
	// agent read it from the two pipes, which need not be the order the
	// process wrote it: which stream each byte is comes from a first read.
	out, errb, _, evs := readOutput(t, f, id, p.PID, 0, client.OutputSSE)
	if !bytes.Equal(out, append(bytes.Clone(big), all...)) || string(errb) != "\xffe" {
		t.Fatalf("stdout %d bytes, stderr %q; want big.bin and all.bin, \\377e", len(out), errb)
	}
	layout := make([]byte, 0, p.OutputBytes) // the stream of each byte: 'o' or 'e'
	for _, ev := range evs {
		layout = append(layout, bytes.Repeat([]byte{ev.Type[3]}, len(ev.Data))...)
	}
	from := func(cursor int64) (wo, we []byte) {
		o, e := 0, 0
		for i, s := range layout {
			if s == 'o' {
				if int64(i) >= cursor {
					wo = append(wo, out[o])
				}
				o++
			} else {
				if int64(i) >= cursor {
					we = append(we, errb[e])
				}
				e++
			}
		}
		return wo, we
	}
	for _, tr := range transports {
		for _, cursor := range []int64{0, 1, int64(len(big)), int64(len(big)) + 1, p.OutputBytes - 1, p.OutputBytes} {
			t.Run(fmt.Sprintf("%s from %d", tr.name, cursor), func(t *testing.T) {
				gotOut, gotErr, dropped, _ := readOutput(t, f, id, p.PID, cursor, tr.t)
				wo, we := from(cursor)
				if dropped != 0 || !bytes.Equal(gotOut, wo) || !bytes.Equal(gotErr, we) {
					t.Fatalf("stdout %d bytes (right: %v), stderr %q, dropped %d; want %d bytes, %q, 0",
						len(gotOut), bytes.Equal(gotOut, wo), gotErr, dropped, len(wo), we)
				}
			})
		}
	}
}

// TestProcessOutputDropped: a reader behind the process's buffer is told
// how much it missed, then gets the rest exactly, on every transport.
func TestProcessOutputDropped(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	const n = 3_000_000
	p := startAndWait(t, f, id, "head -c "+strconv.Itoa(n)+" /dev/zero; printf end")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			out, errb, dropped, evs := readOutput(t, f, id, p.PID, 0, tr.t)
			if evs[0].Type != api.OutputDropped || dropped == 0 || dropped+int64(len(out)) != n+3 || len(errb) != 0 {
				t.Fatalf("dropped %d (first event %q) + %d delivered, want %d in all, a dropped event first", dropped, evs[0].Type, len(out), n+3)
			}
			if !bytes.HasSuffix(out, []byte("end")) || bytes.ContainsFunc(out[:len(out)-3], func(r rune) bool { return r != 0 }) {
				t.Fatalf("delivered output is not zeros then %q", "end")
			}
		})
	}
}

// TestProcessOutputLive: output read as the process writes it, on every
// transport; and a cursor past the end of the output, which in binary
// form sends the first output as a JSON event with its offset.
func TestProcessOutputLive(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", `printf ab; read x; printf 'c\377'; printf e >&2`}})
			if err != nil {
				t.Fatal(err)
			}
			for p.OutputBytes < 2 {
				if p, err = f.ca.GetProcess(f.ctx, id, p.PID); err != nil {
					t.Fatal(err)
				}
			}
			st, err := f.ca.ProcessOutputOver(f.ctx, id, p.PID, 100, true, tr.t)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := f.ca.WriteStdin(f.ctx, id, p.PID, strings.NewReader("\n"), true); err != nil {
				t.Fatal(err)
			}
			var got []api.OutputEvent
			for {
				ev, err := st.Next()
				if err != nil {
					t.Fatalf("stream ended before the exit event: %v (got %+v)", err, got)
				}
				if ev.Type == api.OutputExit {
					break
				}
				got = append(got, ev)
			}
			// The process may write c\377 in one piece or two.
			var out []byte
			next := int64(2)
			for _, ev := range got {
				if ev.Offset != next || ev.Type == api.OutputDropped {
					t.Fatalf("events %+v: want output from offset 2 on", got)
				}
				if ev.Type == api.OutputStdout {
					out = append(out, ev.Data...)
				}
				next += int64(len(ev.Data))
			}
			if string(out) != "c\xff" || next != 5 || st.Cursor() != 5 {
				t.Fatalf("events %+v (cursor %d): want c\\377 at 2, e at 4", got, st.Cursor())
			}
		})
	}
}

// wsMessage is one WebSocket message as the server sent it.
type wsMessage struct {
	typ  websocket.MessageType
	data []byte
}

// dialOutput opens the output WebSocket by hand, offering protocols, and
// reads every message until the server closes.
func dialOutput(t *testing.T, f *apiFixture, id string, pid int, cursor int64, protocols ...string) (string, []wsMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	u := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/v1/sandboxes/" + id + "/processes/" + strconv.Itoa(pid) + "/output?cursor=" + strconv.FormatInt(cursor, 10)
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + f.keyA}}, Subprotocols: protocols})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)
	var msgs []wsMessage
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("read: %v", err)
			}
			return conn.Subprotocol(), msgs
		}
		msgs = append(msgs, wsMessage{typ, b})
	}
}

// TestOutputWebSocketWire: the messages themselves. With hutch.output.v2
// output is binary (a stream tag, then the bytes) and the exit a JSON
// text message; without it, every message is a JSON event as before.
func TestOutputWebSocketWire(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	p := startAndWait(t, f, id, `printf 'o\000\377'; printf 'e\n' >&2; printf 'p'`)

	proto, msgs := dialOutput(t, f, id, p.PID, 0, "other", api.OutputProtocolBinary)
	if proto != api.OutputProtocolBinary {
		t.Fatalf("subprotocol %q, want %q", proto, api.OutputProtocolBinary)
	}
	var streams [3][]byte
	for i, m := range msgs[:len(msgs)-1] {
		if m.typ != websocket.MessageBinary || len(m.data) < 2 || m.data[0] < 1 || m.data[0] > 2 {
			t.Fatalf("message %d: %v %q, want binary output with a stream tag", i, m.typ, m.data)
		}
		streams[m.data[0]] = append(streams[m.data[0]], m.data[1:]...)
	}
	if string(streams[1]) != "o\x00\xffp" || string(streams[2]) != "e\n" {
		t.Fatalf("stdout %q, stderr %q", streams[1], streams[2])
	}
	last := msgs[len(msgs)-1]
	var exit api.OutputEvent
	if last.typ != websocket.MessageText || json.Unmarshal(last.data, &exit) != nil || exit.Type != api.OutputExit ||
		exit.Offset != 6 || exit.Process == nil || exit.Process.PID != p.PID {
		t.Fatalf("last message %v %q, want the exit event as JSON text", last.typ, last.data)
	}

	proto, msgs = dialOutput(t, f, id, p.PID, 0)
	if proto != "" {
		t.Fatalf("subprotocol %q without asking", proto)
	}
	var out []byte
	for i, m := range msgs {
		var ev api.OutputEvent
		if m.typ != websocket.MessageText || json.Unmarshal(m.data, &ev) != nil {
			t.Fatalf("message %d: %v %q, want a JSON event", i, m.typ, m.data)
		}
		if ev.Type == api.OutputStdout {
			out = append(out, ev.Data...)
		}
	}
	if string(out) != "o\x00\xffp" {
		t.Fatalf("stdout %q", out)
	}
}

// TestOutputJSONExact: the output and exec events the server writes by
// hand are byte for byte what encoding/json makes of them.
func TestOutputJSONExact(t *testing.T) {
	exit := 3
	for _, ev := range []api.OutputEvent{
		{Type: api.OutputStdout, Offset: 0, Data: []byte("hi")},
		{Type: api.OutputStderr, Offset: 1 << 40, Data: allBytes()},
		{Type: api.OutputStdout, Offset: 7},
		{Type: api.OutputStdout, Offset: 7, Data: []byte{}},
		{Type: api.OutputDropped, Offset: 100, Dropped: 60},
		{Type: api.OutputExit, Offset: 5, Process: &api.Process{PID: 9, Cmd: []string{"x"}, ExitCode: &exit}},
		{Type: "odd\"type\n", Offset: 1, Data: []byte("x")},
	} {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendOutputJSON([]byte("prefix"), ev); string(got) != "prefix"+string(want) {
			t.Errorf("appendOutputJSON(%+v) = %s, want %s", ev, got, want)
		}
	}
	for _, ev := range []api.ExecEvent{
		{Type: api.ExecStdout, Data: []byte("<&>\xff")},
		{Type: api.ExecStderr, Data: randomBytes(1000)},
		{Type: api.ExecStdout},
		{Type: api.ExecExit, Exit: &api.ExecResult{ExitCode: 1, Signal: "SIGKILL"}},
	} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(ev); err != nil {
			t.Fatal(err)
		}
		if got := appendExecJSON(nil, ev); string(got) != want.String() {
			t.Errorf("appendExecJSON(%+v) = %s, want %s", ev, got, want.String())
		}
	}
}

// TestProcessOutputSmallWrites: many small writes followed as they come,
// merged or not on the way, arrive whole and in order on every transport.
func TestProcessOutputSmallWrites(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintln(&want, i)
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			p, err := f.ca.StartProcess(f.ctx, id, api.ProcessRequest{Cmd: []string{"sh", "-c", "for i in $(seq 1 20000); do echo $i; done"}})
			if err != nil {
				t.Fatal(err)
			}
			out, errb, dropped, _ := readOutput(t, f, id, p.PID, 0, tr.t)
			if string(out) != want.String() || len(errb) != 0 || dropped != 0 {
				t.Fatalf("%d bytes of stdout (right: %v), %d of stderr, %d dropped", len(out), string(out) == want.String(), len(errb), dropped)
			}
		})
	}
	st, err := f.ca.ExecStream(f.ctx, id, api.ExecRequest{Cmd: []string{"sh", "-c", "for i in $(seq 1 20000); do echo $i; done"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := st.Copy(&out, nil); err != nil || out.String() != want.String() {
		t.Fatalf("exec stream: %d bytes (right: %v), %v", out.Len(), out.String() == want.String(), err)
	}
}
