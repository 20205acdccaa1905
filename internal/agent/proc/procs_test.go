package proc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// output reads a process's output from cursor until the stream ends and
// returns it, the bytes reported dropped, and the exit event's process.
func output(t *testing.T, f *agenttest.Fixture, pid int, cursor int64, follow bool) (out []byte, dropped int64, exit *api.Process) {
	t.Helper()
	st, err := f.Client.ProcessOutput(context.Background(), pid, cursor, follow)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err == io.EOF {
			return out, dropped, exit
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case api.OutputStdout, api.OutputStderr:
			if ev.Offset != cursor {
				t.Fatalf("event at offset %d, want %d", ev.Offset, cursor)
			}
			out = append(out, ev.Data...)
			cursor += int64(len(ev.Data))
		case api.OutputDropped:
			dropped += ev.Dropped
			cursor = ev.Offset
		case api.OutputExit:
			exit = ev.Process
		}
	}
}

func TestProcessLifecycle(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	p, err := f.Client.StartProcess(ctx, api.ProcessRequest{
		Cmd: []string{"sh", "-c", `echo out; echo err >&2; read x; echo "got $x"; exit 3`},
		Tag: "job",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Running || p.PID <= 0 || p.Tag != "job" || !p.StdinOpen {
		t.Fatalf("started %+v", p)
	}
	if _, err := f.Client.WriteStdin(ctx, p.PID, strings.NewReader("hello\n"), true); err != nil {
		t.Fatal(err)
	}
	out, dropped, exit := output(t, f, p.PID, 0, true)
	// stdout and stderr are two pipes: their order against each other is
	// not defined, only within each.
	text := string(out)
	if o, g := strings.Index(text, "out\n"), strings.Index(text, "got hello\n"); o < 0 || g < o || !strings.Contains(text, "err\n") || len(text) != len("out\nerr\ngot hello\n") || dropped != 0 {
		t.Fatalf("output %q, dropped %d", text, dropped)
	}
	if exit == nil || exit.Running || exit.ExitCode == nil || *exit.ExitCode != 3 || exit.EndedAt == nil || exit.StdinOpen {
		t.Fatalf("exit event %+v", exit)
	}
	got, err := f.Client.WaitProcess(ctx, p.PID, time.Second)
	if err != nil || got.Running || *got.ExitCode != 3 || got.OutputBytes != int64(len(out)) {
		t.Fatalf("wait = %+v, %v", got, err)
	}
	list, err := f.Client.ListProcesses(ctx)
	if err != nil || len(list.Processes) != 1 || list.Processes[0].PID != p.PID {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if _, err := f.Client.WriteStdin(ctx, p.PID, strings.NewReader("late"), false); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("stdin after exit: %v, want a conflict", err)
	}
	if _, err := f.Client.SignalProcess(ctx, p.PID, api.SignalRequest{Signal: "TERM"}); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("signal after exit: %v, want a conflict", err)
	}
	if !agenttest.Dead(p.PID) {
		t.Fatalf("process %d is still there (a zombie?)", p.PID)
	}
	_, err = f.Client.GetProcess(ctx, 999999)
	agenttest.WantErr(t, "unknown pid", err, errdefs.ErrNotFound, "process_not_found")
	_, err = f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"no-such-program-xyz"}})
	agenttest.WantErr(t, "missing program", err, errdefs.ErrInvalid, "program_not_found")
}

// TestProcessReconnect: a client that leaves mid-stream and comes back at
// its cursor gets everything, once.
func TestProcessReconnect(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	p, err := f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"sh", "-c", `for i in 1 2 3 4 5 6; do echo line$i; sleep 0.05; done`}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Client.ProcessOutput(ctx, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := st.Next()
	if err != nil || ev.Type != api.OutputStdout {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	st.Close()
	first := ev.Data
	rest, dropped, exit := output(t, f, p.PID, int64(len(first)), true)
	all := string(first) + string(rest)
	if all != "line1\nline2\nline3\nline4\nline5\nline6\n" || dropped != 0 || exit == nil {
		t.Fatalf("output across a reconnect %q, dropped %d, exit %+v", all, dropped, exit)
	}
}

// TestProcessOverflowReported: output beyond the buffer is dropped and
// counted, and a writer is never held back by a reader that is absent.
func TestProcessOverflowReported(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	const total = 3_000_000 // three times the default buffer
	p, err := f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"sh", "-c", "head -c " + strconv.Itoa(total) + " /dev/zero | tr '\\0' x"}})
	if err != nil {
		t.Fatal(err)
	}
	// Nobody reads: the process still runs to its end.
	got, err := f.Client.WaitProcess(ctx, p.PID, time.Minute)
	if err != nil || got.Running || got.OutputBytes != total {
		t.Fatalf("wait = %+v, %v; want it ended with %d bytes written", got, err, total)
	}
	out, dropped, exit := output(t, f, p.PID, 0, true)
	if int64(len(out))+dropped != total || dropped == 0 || exit == nil || bytes.Count(out, []byte("x")) != len(out) {
		t.Fatalf("read %d bytes, %d dropped, exit %v; want %d in all with some dropped", len(out), dropped, exit != nil, total)
	}
	// A reader ahead of the end waits for more; one past the end is put
	// at the end.
	if out, dropped, _ := output(t, f, p.PID, total+100, false); len(out) != 0 || dropped != 0 {
		t.Fatalf("a cursor past the end read %d bytes, %d dropped", len(out), dropped)
	}
}

// TestProcessFastWriter: 200,000 lines as fast as they come, with a
// reader that takes its time, are all accounted for: read or dropped.
func TestProcessFastWriter(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	p, err := f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"seq", "1", "200000"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Client.ProcessOutput(ctx, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var read, dropped int64
	for {
		ev, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		read += int64(len(ev.Data))
		dropped += ev.Dropped
		if ev.Type == api.OutputExit {
			if ev.Process.OutputBytes != read+dropped {
				t.Fatalf("read %d + dropped %d, but it wrote %d", read, dropped, ev.Process.OutputBytes)
			}
		}
		time.Sleep(time.Millisecond) // a slow reader
	}
}

func TestProcessSignalsGroup(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	p, err := f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"sh", "-c", `sleep 300 & echo $!; sleep 300 & echo $!; wait`}})
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	agenttest.WaitFor(t, "two children", func() bool {
		out, _, _ := output(t, f, p.PID, 0, false)
		kids = kids[:0]
		for _, f := range strings.Fields(string(out)) {
			n, _ := strconv.Atoi(f)
			kids = append(kids, n)
		}
		return len(kids) == 2
	})
	if _, err := f.Client.SignalProcess(ctx, p.PID, api.SignalRequest{Signal: "SIGTERM", Group: true}); err != nil {
		t.Fatal(err)
	}
	got, err := f.Client.WaitProcess(ctx, p.PID, time.Minute)
	if err != nil || got.Running || got.Signal != "SIGTERM" {
		t.Fatalf("after SIGTERM to the group: %+v, %v", got, err)
	}
	for _, k := range kids {
		agenttest.WaitFor(t, "child "+strconv.Itoa(k)+" gone and reaped", func() bool { return agenttest.Dead(k) })
	}
	_, err = f.Client.SignalProcess(ctx, p.PID, api.SignalRequest{Signal: "BOOM"})
	agenttest.WantErr(t, "bad signal", err, errdefs.ErrInvalid, "invalid_signal")
}

// TestProcessPTY: an interactive shell on a terminal answers typed input,
// sees its size change, and exits.
func TestProcessPTY(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx := context.Background()
	p, err := f.Client.StartProcess(ctx, api.ProcessRequest{Cmd: []string{"bash", "--norc", "--noprofile", "-i"}, PTY: &api.TermSize{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.PTY {
		t.Fatalf("started %+v, want a PTY", p)
	}
	say := func(s string) {
		t.Helper()
		if _, err := f.Client.WriteStdin(ctx, p.PID, strings.NewReader(s), false); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want string) {
		t.Helper()
		agenttest.WaitFor(t, "terminal output "+strconv.Quote(want), func() bool {
			out, _, _ := output(t, f, p.PID, 0, false)
			return strings.Contains(string(out), want)
		})
	}
	say("echo $((6*7)) $TERM; stty size\n")
	expect("42 xterm-256color")
	expect("24 80")
	if _, err := f.Client.ResizeProcess(ctx, p.PID, api.TermSize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	say("stty size\n")
	expect("40 100")
	say("exit 5\n")
	got, err := f.Client.WaitProcess(ctx, p.PID, time.Minute)
	if err != nil || got.Running || *got.ExitCode != 5 {
		t.Fatalf("after exit: %+v, %v", got, err)
	}
	_, err = f.Client.ResizeProcess(ctx, p.PID, api.TermSize{Rows: 0, Cols: 10})
	agenttest.WantErr(t, "bad size", err, errdefs.ErrInvalid, "invalid_pty")
}
