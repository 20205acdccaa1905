package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestProcesses: a background process through the whole stack, under each
// driver: output over SSE with a reconnect mid-stream, stdin, a signal to
// its group, and the process.started and process.exited events.
func TestProcesses(t *testing.T) {
	for _, drv := range []string{"namespace", "process"} {
		t.Run(drv, func(t *testing.T) { testProcesses(t, drv) })
	}
}

func testProcesses(t *testing.T, driver string) {
	s := startServer(t, "", "--driver", driver)
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{
		Cmd: []string{"sh", "-c", `for i in 1 2 3 4 5; do echo out$i; sleep 0.05; done; echo oops >&2; read x; echo "in:$x"; exit 4`},
		Tag: "worker",
	})
	if err != nil {
		t.Fatal(err)
	}
	// Read the first event, go away, come back at the cursor.
	st, err := c.ProcessOutput(ctx, sb.ID, p.PID, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := st.Next()
	if err != nil || ev.Type != api.OutputStdout {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	got := string(ev.Data)
	cursor := st.Cursor()
	st.Close()
	if cursor != int64(len(ev.Data)) {
		t.Fatalf("cursor after the first event = %d, want %d", cursor, len(ev.Data))
	}
	if _, err := c.WriteStdin(ctx, sb.ID, p.PID, strings.NewReader("typed\n"), true); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	stdout.WriteString(got)
	exit, err := c.CopyOutput(ctx, sb.ID, p.PID, cursor, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "out1\nout2\nout3\nout4\nout5\nin:typed\n" || stderr.String() != "oops\n" || *exit.ExitCode != 4 {
		t.Fatalf("stdout %q, stderr %q, exit %+v", stdout.String(), stderr.String(), exit)
	}

	// A signal to the whole group reaches the children too.
	q, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "sleep 300 & sleep 300 & wait"}})
	if err != nil {
		t.Fatal(err)
	}
	// Counted among the sandbox's uid's processes: a process sandbox sees
	// the host's too.
	waitUntil(t, "the sleepers started", func() bool {
		res, _ := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", `pgrep -c -x -U "$(id -u)" sleep || true`}})
		return res != nil && strings.TrimSpace(res.Stdout) == "2"
	})
	if _, err := c.SignalProcess(ctx, sb.ID, q.PID, "KILL", true); err != nil {
		t.Fatal(err)
	}
	if done, err := c.WaitProcess(ctx, sb.ID, q.PID, time.Minute); err != nil || done.Running || done.Signal != "SIGKILL" {
		t.Fatalf("after KILL to the group: %+v, %v", done, err)
	}
	waitUntil(t, "the sleepers gone, not zombies", func() bool {
		res, _ := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"sh", "-c", `ps -U "$(id -u)" -o stat=,comm= | grep -c -e sleep -e '^Z' || true`}})
		return res != nil && strings.TrimSpace(res.Stdout) == "0"
	})
	list, err := c.ListProcesses(ctx, sb.ID)
	if err != nil || len(list.Processes) != 2 || list.Processes[0].Tag != "worker" || list.Processes[0].Running {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// Both exits are events, with their status.
	waitUntil(t, "two process.exited events", func() bool {
		evs, err := c.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventProcessExited}})
		return err == nil && len(evs.Events) == 2
	})
	evs, _ := c.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventProcessStarted, api.EventProcessExited}})
	// An exit is reported by the agent's event stream, not by the call that
	// saw it, so the first process's exit may be logged after the second
	// one started: order holds per process, not across them.
	seen := map[int][]string{}
	for _, e := range evs.Events {
		pid := int(e.Data["pid"].(float64))
		detail := ""
		if e.Type == api.EventProcessExited {
			detail = fmt.Sprint(e.Data["exit_code"], e.Data["signal"])
		}
		seen[pid] = append(seen[pid], e.Type+detail)
	}
	want := map[int][]string{
		p.PID: {api.EventProcessStarted, api.EventProcessExited + "4"},
		q.PID: {api.EventProcessStarted, api.EventProcessExited + "137SIGKILL"},
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("process events %v (%+v), want %v", seen, evs.Events, want)
	}
}

// TestTerminal: an interactive shell on a terminal over the WebSocket
// answers typed input, sees a resize, and reports its exit; hutch shell
// exits with the remote status.
func TestTerminal(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	c := s.client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	term, err := c.OpenTerminal(ctx, sb.ID, client.TerminalOptions{Cmd: []string{"bash", "--norc", "-i"}, Size: api.TermSize{Rows: 30, Cols: 90}})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if !term.Process.PTY || !term.Process.Running {
		t.Fatalf("terminal process %+v", term.Process)
	}
	var screen strings.Builder
	expect := func(want string) {
		t.Helper()
		for !strings.Contains(screen.String(), want) {
			o, err := term.Next(ctx)
			if err != nil {
				t.Fatalf("waiting for %q: %v; screen so far %q", want, err, screen.String())
			}
			screen.Write(o.Data)
		}
	}
	if err := term.Input(ctx, []byte("echo $((7*6)); stty size\n")); err != nil {
		t.Fatal(err)
	}
	expect("42")
	expect("30 90")
	if err := term.Resize(ctx, api.TermSize{Rows: 50, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	if err := term.Input(ctx, []byte("stty size; exit 6\n")); err != nil {
		t.Fatal(err)
	}
	expect("50 120")
	for {
		o, err := term.Next(ctx)
		if err != nil {
			t.Fatalf("no exit message: %v", err)
		}
		if o.Message != nil && o.Message.Type == api.TerminalExit {
			if *o.Message.Process.ExitCode != 6 {
				t.Fatalf("exit %+v", o.Message.Process)
			}
			break
		}
	}
	// The CLI, without a local terminal, takes the remote status.
	_, errOut, code := s.cli("exit 7\n", "shell", sb.ID, "--", "bash", "--norc")
	if code != 7 {
		t.Fatalf("hutch shell exited %d, want 7 (%s)", code, errOut)
	}
}

// TestProcessSurvivesRestart: a background process goes on while the
// control plane restarts, and its output, from before and after, is still
// readable; its exit is recorded once.
func TestProcessSurvivesRestart(t *testing.T) {
	s := startServer(t, "", "--driver", "namespace")
	dataDir := s.dataDir
	c := s.client()
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.StartProcess(ctx, sb.ID, api.ProcessRequest{Cmd: []string{"sh", "-c", "echo before; read x; echo after:$x"}})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the first line", func() bool {
		got, err := c.GetProcess(ctx, sb.ID, p.PID)
		return err == nil && got.OutputBytes == int64(len("before\n"))
	})
	s.stop(false)
	s2 := startServer(t, dataDir)
	c2 := s2.client()
	if _, err := c2.WriteStdin(ctx, sb.ID, p.PID, strings.NewReader("restarted\n"), true); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	exit, err := c2.CopyOutput(ctx, sb.ID, p.PID, 0, &out, io.Discard)
	if err != nil || out.String() != "before\nafter:restarted\n" || *exit.ExitCode != 0 {
		t.Fatalf("output across a restart %q, exit %+v, %v", out.String(), exit, err)
	}
	waitUntil(t, "its exit recorded", func() bool {
		evs, err := c2.SandboxEvents(ctx, sb.ID, client.EventQuery{Types: []string{api.EventProcessExited}})
		return err == nil && len(evs.Events) == 1
	})
}

// waitUntil polls cond until it holds, failing after a generous bound (a
// hang guard, not a performance threshold).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
