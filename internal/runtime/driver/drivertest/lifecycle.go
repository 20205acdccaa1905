package drivertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver"
)

func testLifecycle(t *testing.T, s Suite) {
	d := s.New(t)
	ctx := context.Background()
	sp := spec(api.Limits{MemoryMB: 256, Pids: 128})
	sb := create(t, d, sp)
	if st, err := d.Status(ctx, sb.handle); err != nil || st.State != driver.Running {
		t.Fatalf("Status after Create = %+v, %v; want running", st, err)
	}
	if got := sh(t, sb, "echo hello"); got != "hello\n" {
		t.Fatalf("echo = %q", got)
	}
	sh(t, sb, "echo kept > kept.txt")
	// A background process must not survive Stop.
	sh(t, sb, "sleep 300 >/dev/null 2>&1 &")
	if !d.Capabilities().StartStop {
		return
	}
	if err := d.Stop(ctx, sb.handle); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st, _ := d.Status(ctx, sb.handle); st.State != driver.Stopped {
		t.Fatalf("Status after Stop = %+v, want stopped", st)
	}
	if procs := processesOf(sb.id); len(procs) != 0 {
		t.Fatalf("processes survived Stop: %v", procs)
	}
	// Two Starts at once: one starts the agent, the other is refused as a
	// conflict, and exactly one agent runs.
	type started struct {
		h   driver.Handle
		err error
	}
	results := make(chan started, 2)
	for range 2 {
		go func() {
			h, err := d.Start(ctx, sb.handle)
			results <- started{h, err}
		}()
	}
	var h driver.Handle
	var oks, conflicts int
	for range 2 {
		r := <-results
		switch {
		case r.err == nil:
			oks++
			h = r.h
		case errors.Is(r.err, errdefs.ErrConflict):
			conflicts++
		default:
			t.Fatalf("Start: %v", r.err)
		}
	}
	if oks != 1 || conflicts != 1 {
		t.Fatalf("two concurrent Starts: %d started, %d refused as conflicts; want 1 and 1", oks, conflicts)
	}
	if _, err := d.Start(ctx, h); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("Start of a running sandbox = %v, want a conflict", err)
	}
	sb.reattach(h)
	if got := sh(t, sb, "cat kept.txt"); got != "kept\n" {
		t.Fatalf("file after Stop/Start = %q, want kept", got)
	}
	if err := d.Destroy(ctx, sb.handle); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if st, _ := d.Status(ctx, sb.handle); st.State != driver.Gone {
		t.Fatalf("Status after Destroy = %+v, want gone", st)
	}
	assertClean(t, s, sb.id)
	if err := d.Destroy(ctx, sb.handle); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
	_, err := sb.agent.Stat(ctx, ".")
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("agent after Destroy answered %v, want unavailable", err)
	}
}

func testExec(t *testing.T, s Suite) {
	d := s.New(t)
	sb := create(t, d, spec(api.Limits{}))
	res := runReq(t, sb, api.ExecRequest{
		Cmd:   []string{"/bin/sh", "-c", `read x; echo "$x-$FOO"; echo err >&2; exit 3`},
		Env:   map[string]string{"FOO": "bar"},
		Stdin: "in\n",
	})
	if res.ExitCode != 3 || res.Stdout != "in-bar\n" || res.Stderr != "err\n" {
		t.Fatalf("exec = %+v", res)
	}
	if res := run(t, sb, "no-such-program-xyz"); res.ExitCode != 127 || res.Error == "" {
		t.Fatalf("missing program = %+v, want exit 127 and an error", res)
	}
	res = runReq(t, sb, api.ExecRequest{Cmd: []string{"sleep", "30"}, TimeoutMS: 200})
	if !res.TimedOut || res.ExitCode == 0 {
		t.Fatalf("timeout = %+v, want timed out", res)
	}
	if got := sh(t, sb, "pwd"); strings.TrimSpace(got) != sb.handle.Workdir {
		t.Fatalf("pwd = %q, want the workdir %q", got, sb.handle.Workdir)
	}
	id := strings.TrimSpace(sh(t, sb, "echo $HUTCH_SANDBOX_ID"))
	if id != sb.id {
		t.Fatalf("HUTCH_SANDBOX_ID = %q, want %q", id, sb.id)
	}
	// The agent's own environment (the namespace driver sets its
	// GOMAXPROCS) is not its commands'.
	if got := strings.TrimSpace(sh(t, sb, "echo ${GOMAXPROCS-unset}")); got != "unset" {
		t.Fatalf("a command sees GOMAXPROCS=%q, the agent's", got)
	}
	// A client that goes away kills the command.
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sb.agent.Exec(ctx, api.ExecRequest{Cmd: []string{"/bin/sh", "-c", "echo started; exec sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := st.Next(); err != nil || string(ev.Data) != "started\n" {
		t.Fatalf("first event = %+v, %v", ev, err)
	}
	cancel()
	st.Close()
	deadline := time.Now().Add(5 * time.Second)
	for len(commandsOf(sb.id, "sleep\x00300\x00")) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("command survived its client going away")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
