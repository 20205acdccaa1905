package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/supervisor"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

// appFixture is an agent whose supervisor restarts, gives up and polls
// quickly, so a test takes seconds, not minutes.
func appFixture(t *testing.T) *agenttest.Fixture {
	t.Helper()
	return appFixtureWith(t, nil)
}

// appFixtureWith is appFixture with its configuration changed by
// configure (see agenttest.New).
func appFixtureWith(t *testing.T, configure func(*agent.Config)) *agenttest.Fixture {
	t.Helper()
	t.Cleanup(supervisor.SetTiming(supervisor.Timing{
		BackoffMin: 20 * time.Millisecond,
		BackoffMax: 100 * time.Millisecond,
		ResetAfter: time.Second,
		FastWindow: 300 * time.Millisecond,
		StopGrace:  500 * time.Millisecond,
		Poll:       50 * time.Millisecond,
	}))
	return agenttest.New(t, configure)
}

// writeManifest replaces the app's manifest at once (a rename, as the
// file API writes), so the poller never reads half of it.
func writeManifest(t *testing.T, dir, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".sandbox.yaml.tmp")
	agenttest.WriteHost(t, tmp, content)
	if err := os.Rename(tmp, filepath.Join(dir, "sandbox.yaml")); err != nil {
		t.Fatal(err)
	}
}

const loopCmd = `while :; do sleep 1; done`

// app is one call of the supervisor's wire protocol, whose status the
// tests read whole (the client's typed methods convert it for the control
// plane).
func app(ctx context.Context, f *agenttest.Fixture, method, path string, in any) (agentproto.AppStatus, error) {
	var st agentproto.AppStatus
	err := f.Client.Call(ctx, method, path, nil, in, &st)
	return st, err
}

func configure(t *testing.T, f *agenttest.Fixture, env map[string]string) agentproto.AppStatus {
	t.Helper()
	st, err := app(context.Background(), f, http.MethodPut, "/app", agentproto.AppConfig{Dir: f.Work, Env: env})
	if err != nil {
		t.Fatalf("configure: %v", err)
	}
	return st
}

func appStatus(t *testing.T, f *agenttest.Fixture) agentproto.AppStatus {
	t.Helper()
	st, err := app(context.Background(), f, http.MethodGet, "/app", nil)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

func procOf(st agentproto.AppStatus, name string) (agentproto.AppProcess, bool) {
	i := slices.IndexFunc(st.Processes, func(p agentproto.AppProcess) bool { return p.Name == name })
	if i < 0 {
		return agentproto.AppProcess{}, false
	}
	return st.Processes[i], true
}

// waitProc waits until the process called name satisfies cond and returns
// it.
func waitProc(t *testing.T, f *agenttest.Fixture, name, what string, cond func(agentproto.AppProcess) bool) agentproto.AppProcess {
	t.Helper()
	var p agentproto.AppProcess
	agenttest.WaitFor(t, name+" "+what, func() bool {
		var ok bool
		p, ok = procOf(appStatus(t, f), name)
		return ok && cond(p)
	})
	return p
}

func running(p agentproto.AppProcess) bool { return p.State == agentproto.AppRunning && p.PID > 0 }

// freePort is a TCP port nothing listens on now, from below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range). It stays free only until
// the app binds it, and one of that range any bind to port 0 on the host
// may take meanwhile: a window a loaded machine stretches, after which the
// web server fails to bind at each start and is crashed.
func freePort(t *testing.T) int {
	t.Helper()
	low := 32768 // the kernel's default
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for range 100 {
		port := 1024 + rand.IntN(max(low-1024, 1))
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

// logLines reads a process's log (tail lines, no follow).
func logLines(t *testing.T, f *agenttest.Fixture, name string, tail int) []api.AppLogLine {
	t.Helper()
	logs, err := f.Client.AppLogs(context.Background(), name, tail, false)
	if err != nil {
		t.Fatalf("AppLogs(%s): %v", name, err)
	}
	defer logs.Close()
	var out []api.AppLogLine
	for {
		l, err := logs.Next()
		if err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("logs of %s: %v", name, err)
		}
		out = append(out, l)
	}
}

func hasLine(lines []api.AppLogLine, stream, sub string) bool {
	return slices.ContainsFunc(lines, func(l api.AppLogLine) bool { return l.Stream == stream && strings.Contains(l.Line, sub) })
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// state, ppid, pgrp
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && !agenttest.Dead(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestAppSupervisorRestartsAnExit: a web server and a worker run; a
// killed worker is started again, counted and marked in its log.
func TestAppSupervisorRestartsAnExit(t *testing.T) {
	f := appFixture(t)
	port := freePort(t)
	writeManifest(t, f.Work, fmt.Sprintf(`version: 1
web:
  command: exec busybox httpd -f -p 127.0.0.1:$PORT
  port: %d
workers:
  - name: worker
    command: echo "worker up in $PWD"; %s
`, port, loopCmd))
	st := configure(t, f, nil)
	if !st.Configured || st.Dir != f.Work || st.Manifest == nil || st.ManifestError != nil || len(st.Processes) != 2 ||
		st.Processes[0].Name != "web" || !st.Processes[0].Web || st.Processes[0].Port != port || st.Processes[1].Name != "worker" {
		t.Fatalf("configured: %+v", st)
	}
	waitProc(t, f, "web", "running", running)
	w := waitProc(t, f, "worker", "running", running)
	agenttest.WaitFor(t, "the web server answering", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})

	if err := syscall.Kill(w.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w2 := waitProc(t, f, "worker", "restarted and running", func(p agentproto.AppProcess) bool { return running(p) && p.Restarts == 1 })
	if w2.PID == w.PID || w2.LastExitSignal != "SIGKILL" || w2.LastExitCode == nil || *w2.LastExitCode != 128+9 || w2.LastExitAt == nil {
		t.Errorf("after the kill: %+v", w2)
	}
	if web, _ := procOf(appStatus(t, f), "web"); web.Restarts != 0 {
		t.Errorf("web restarted too: %+v", web)
	}
	// Running says the run lasted the fast-fail window, not that its
	// output is in the log yet: the shell may not have run echo, or the
	// pump read it, on a loaded machine.
	runs := func(lines []api.AppLogLine) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l.Line, "worker up") {
				n++
			}
		}
		return n
	}
	var lines []api.AppLogLine
	agenttest.WaitFor(t, "the second run's output in the log", func() bool {
		lines = logLines(t, f, "worker", 100)
		return runs(lines) >= 2
	})
	if !hasLine(lines, agentproto.Stdout, "worker up in "+f.Work) || !hasLine(lines, agentproto.LogSystem, "--- restarted (killed by SIGKILL) ---") {
		t.Errorf("worker's log: %+v", lines)
	}
	if n := runs(lines); n != 2 {
		t.Errorf("%d runs in the log, want 2", n)
	}
}

// TestAppSupervisorCrashedAndRestart: a command that fails at once is
// crashed after FastLimit fast exits, and a restart gives it a fresh
// chance (what undo does after restoring files).
func TestAppSupervisorCrashedAndRestart(t *testing.T) {
	f := appFixture(t)
	writeManifest(t, f.Work, `version: 1
workers:
  - name: flaky
    command: test -f fixed || { echo broken >&2; exit 3; }; `+loopCmd+`
  - name: steady
    command: `+loopCmd+`
`)
	configure(t, f, nil)
	p := waitProc(t, f, "flaky", "crashed", func(p agentproto.AppProcess) bool { return p.State == agentproto.AppCrashed })
	// FastLimit runs in a row failed fast: 5 runs, or more when a run
	// took longer than the window on a loaded machine.
	if p.Restarts < 4 || p.PID != 0 || p.LastExitCode == nil || *p.LastExitCode != 3 ||
		!strings.Contains(p.Message, "exited 5 times within 300ms of starting; last exit code 3") {
		t.Errorf("crashed: %+v", p)
	}
	lines := logLines(t, f, "flaky", 100)
	if !hasLine(lines, agentproto.Stderr, "broken") || !hasLine(lines, agentproto.LogSystem, "--- crashed: exited 5 times") {
		t.Errorf("flaky's log: %+v", lines)
	}
	// It stays crashed: nothing restarts it by itself.
	time.Sleep(200 * time.Millisecond)
	if q, _ := procOf(appStatus(t, f), "flaky"); q.State != agentproto.AppCrashed || q.Restarts != p.Restarts {
		t.Errorf("crashed, later: %+v", p)
	}
	steady := waitProc(t, f, "steady", "running", running)

	agenttest.WriteHost(t, filepath.Join(f.Work, "fixed"), "")
	st, err := app(context.Background(), f, http.MethodPost, "/app/restart", agentproto.AppRestartRequest{Names: []string{"flaky"}})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := procOf(st, "flaky"); p.State == agentproto.AppCrashed {
		t.Errorf("still crashed after the restart: %+v", p)
	}
	crashed := p
	p = waitProc(t, f, "flaky", "running again", running)
	if p.Restarts != crashed.Restarts+1 || p.Message != "" {
		t.Errorf("restarted: %+v", p)
	}
	if s, _ := procOf(appStatus(t, f), "steady"); s.PID != steady.PID {
		t.Errorf("steady was restarted too: %+v, was %+v", s, steady)
	}

	// All of them, by no name.
	if _, err := app(context.Background(), f, http.MethodPost, "/app/restart", agentproto.AppRestartRequest{}); err != nil {
		t.Fatal(err)
	}
	waitProc(t, f, "steady", "restarted", func(p agentproto.AppProcess) bool { return running(p) && p.PID != steady.PID && p.Restarts == 1 })
	_, err = app(context.Background(), f, http.MethodPost, "/app/restart", agentproto.AppRestartRequest{Names: []string{"nope"}})
	agenttest.WantErr(t, "restart of an unknown process", err, errdefs.ErrNotFound, "app_process_not_found")
}

// TestAppSupervisorManifestChanges: an invalid manifest leaves the last
// good one running and says where it is wrong; a valid change adds,
// removes and restarts only what changed.
func TestAppSupervisorManifestChanges(t *testing.T) {
	f := appFixture(t)
	writeManifest(t, f.Work, `version: 1
workers:
  - name: a
    command: `+loopCmd+`
  - name: b
    command: `+loopCmd+`
`)
	configure(t, f, nil)
	a := waitProc(t, f, "a", "running", running)
	b := waitProc(t, f, "b", "running", running)

	writeManifest(t, f.Work, `version: 1
workers:
  - name: a
    command: `+loopCmd+`
  - name: b
    command: 42
    bogus: true
`)
	st, err := app(context.Background(), f, http.MethodPost, "/app/reload", nil)
	if err != nil {
		t.Fatal(err)
	}
	me := st.ManifestError
	if me == nil || me.Code != agentproto.ManifestInvalid || len(me.Problems) == 0 || me.Problems[0].Line == 0 || st.Manifest == nil || len(st.Manifest.Workers) != 2 {
		t.Fatalf("reload of an invalid manifest: %+v (error %+v)", st, me)
	}
	for _, want := range []agentproto.AppProcess{a, b} {
		if p, _ := procOf(st, want.Name); p.PID != want.PID || !running(p) {
			t.Errorf("%s after the invalid manifest: %+v, was %+v", want.Name, p, want)
		}
	}

	// The poller finds the next change by itself.
	writeManifest(t, f.Work, `version: 1
workers:
  - name: a
    command: `+loopCmd+`
  - name: c
    command: `+loopCmd+`
`)
	agenttest.WaitFor(t, "c added", func() bool {
		st := appStatus(t, f)
		_, hasB := procOf(st, "b")
		_, hasC := procOf(st, "c")
		return st.ManifestError == nil && hasC && !hasB
	})
	waitProc(t, f, "c", "running", running)
	agenttest.WaitFor(t, "b's process gone", func() bool { return agenttest.Dead(b.PID) })
	if p, _ := procOf(appStatus(t, f), "a"); p.PID != a.PID {
		t.Errorf("a was restarted: %+v, was %+v", p, a)
	}
	_, err = f.Client.AppLogs(context.Background(), "b", 10, false)
	agenttest.WantErr(t, "logs of a removed process", err, errdefs.ErrNotFound, "app_process_not_found")

	// A changed command restarts that process only.
	writeManifest(t, f.Work, `version: 1
workers:
  - name: a
    command: echo changed; `+loopCmd+`
  - name: c
    command: `+loopCmd+`
`)
	c, _ := procOf(appStatus(t, f), "c")
	a2 := waitProc(t, f, "a", "restarted", func(p agentproto.AppProcess) bool { return running(p) && p.PID != a.PID })
	if a2.Command != "echo changed; "+loopCmd || a2.Restarts != 0 {
		t.Errorf("a redefined: %+v", a2)
	}
	if p, _ := procOf(appStatus(t, f), "c"); p.PID != c.PID {
		t.Errorf("c was restarted: %+v, was %+v", p, c)
	}
	if !hasLine(logLines(t, f, "a", 100), agentproto.LogSystem, "restarted (its definition changed)") {
		t.Error("a's log has no restart marker")
	}

	// A missing file is reported; the last good manifest goes on.
	if err := os.Remove(filepath.Join(f.Work, "sandbox.yaml")); err != nil {
		t.Fatal(err)
	}
	st, err = app(context.Background(), f, http.MethodPost, "/app/reload", nil)
	if err != nil || st.ManifestError == nil || st.ManifestError.Code != agentproto.ManifestMissing || len(st.Processes) != 2 {
		t.Fatalf("reload without a manifest: %+v, %v", st, err)
	}
}

// TestAppConfigure: the same configuration again changes nothing; a new
// environment restarts every process with it; a manifest that appears
// after the configuration is picked up.
func TestAppConfigure(t *testing.T) {
	f := appFixture(t)
	st := configure(t, f, map[string]string{"GREETING": "one"})
	if !st.Configured || st.ManifestError == nil || st.ManifestError.Code != agentproto.ManifestMissing || len(st.Processes) != 0 {
		t.Fatalf("configured without a manifest: %+v", st)
	}
	port := freePort(t)
	writeManifest(t, f.Work, fmt.Sprintf(`version: 1
web:
  command: echo "web $PORT $GREETING $FROM_ENVELOPE"; %s
  port: %d
`, loopCmd, port))
	web := waitProc(t, f, "web", "running", running)
	if !hasLine(logLines(t, f, "web", 10), agentproto.Stdout, fmt.Sprintf("web %d one envelope", port)) {
		t.Errorf("web's environment: %+v", logLines(t, f, "web", 10))
	}

	st = configure(t, f, map[string]string{"GREETING": "one"})
	if p, _ := procOf(st, "web"); p.PID != web.PID {
		t.Errorf("the same configuration restarted web: %+v", p)
	}
	configure(t, f, map[string]string{"GREETING": "two"})
	waitProc(t, f, "web", "restarted", func(p agentproto.AppProcess) bool { return running(p) && p.PID != web.PID })
	if !hasLine(logLines(t, f, "web", 10), agentproto.Stdout, fmt.Sprintf("web %d two envelope", port)) {
		t.Errorf("web's new environment: %+v", logLines(t, f, "web", 10))
	}
	if !agenttest.Dead(web.PID) {
		t.Errorf("the first web (%d) still runs", web.PID)
	}
}

// TestAppStopLeavesNothing: stopping kills each process's whole group,
// one that ignores SIGTERM included, and ends followed logs.
func TestAppStopLeavesNothing(t *testing.T) {
	f := appFixture(t)
	writeManifest(t, f.Work, `version: 1
workers:
  - name: parent
    command: sleep 1000 & sleep 1000 & wait
  - name: stubborn
    command: trap '' TERM; echo ready; `+loopCmd+`
`)
	configure(t, f, nil)
	parent := waitProc(t, f, "parent", "running", running)
	stubborn := waitProc(t, f, "stubborn", "running", running)
	agenttest.WaitFor(t, "parent's children", func() bool { return len(groupMembers(t, parent.PID)) == 3 })
	agenttest.WaitFor(t, "stubborn's trap", func() bool { return hasLine(logLines(t, f, "stubborn", 10), agentproto.Stdout, "ready") })
	members := append(groupMembers(t, parent.PID), groupMembers(t, stubborn.PID)...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follow, err := f.Client.AppLogs(ctx, "parent", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer follow.Close()
	followed := make(chan []api.AppLogLine)
	go func() {
		var lines []api.AppLogLine
		for {
			l, err := follow.Next()
			if err != nil {
				followed <- lines
				return
			}
			lines = append(lines, l)
		}
	}()

	if err := f.Client.AppStop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range members {
		if !agenttest.Dead(pid) {
			t.Errorf("process %d lives on after the stop", pid)
		}
	}
	st := appStatus(t, f)
	if st.Configured || len(st.Processes) != 2 {
		t.Fatalf("after the stop: %+v", st)
	}
	for _, p := range st.Processes {
		if p.State != agentproto.AppStopped || p.PID != 0 {
			t.Errorf("after the stop: %+v", p)
		}
	}
	if p, _ := procOf(st, "stubborn"); p.LastExitSignal != "SIGKILL" {
		t.Errorf("stubborn was not killed: %+v", p)
	}
	select {
	case lines := <-followed:
		if !hasLine(lines, agentproto.LogSystem, "--- stopped ---") {
			t.Errorf("followed log: %+v", lines)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the followed log did not end with the stop")
	}
	_, err = app(context.Background(), f, http.MethodPost, "/app/reload", nil)
	agenttest.WantErr(t, "reload after the stop", err, errdefs.ErrConflict, "app_not_configured")

	// PUT /app again resumes.
	configure(t, f, nil)
	waitProc(t, f, "parent", "running again", func(p agentproto.AppProcess) bool { return running(p) && p.Restarts == 1 })
}

// TestAppLogsFollow: tail is the last lines; a followed log streams new
// lines and ends, goroutines and all, when its request does.
func TestAppLogsFollow(t *testing.T) {
	f := appFixture(t)
	writeManifest(t, f.Work, `version: 1
workers:
  - name: talker
    command: i=0; while :; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); sleep 0.02; done
`)
	configure(t, f, nil)
	agenttest.WaitFor(t, "20 lines", func() bool { return len(logLines(t, f, "talker", 20)) == 20 })
	if lines := logLines(t, f, "talker", 3); len(lines) != 3 {
		t.Errorf("tail 3: %+v", lines)
	}
	_, err := f.Client.AppLogs(context.Background(), "talker", -1, false)
	agenttest.WantErr(t, "a negative tail", err, errdefs.ErrInvalid, "invalid_tail")

	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	logs, err := f.Client.AppLogs(ctx, "talker", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var last int = -1
	var lerr error
	for n := 0; n < 10; n++ {
		var l api.AppLogLine
		if l, lerr = logs.Next(); lerr != nil {
			break
		}
		if l.Stream != agentproto.Stdout {
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(l.Line, "out "))
		if err != nil || (last >= 0 && i != last+1) || l.Time.IsZero() {
			t.Fatalf("line %+v after %d", l, last)
		}
		last = i
	}
	if last < 0 {
		t.Fatalf("no line followed: %v", lerr)
	}
	cancel()
	for _, err := logs.Next(); err == nil; _, err = logs.Next() {
	}
	logs.Close()
	agenttest.WaitFor(t, "the follow's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestAppNotConfigured: a plain sandbox supervises nothing, and calls
// that need a configuration say so.
func TestAppNotConfigured(t *testing.T) {
	f := appFixture(t)
	ctx := context.Background()
	st := appStatus(t, f)
	if st.Configured || len(st.Processes) != 0 || st.Manifest != nil {
		t.Errorf("status of a plain sandbox: %+v", st)
	}
	_, err := app(ctx, f, http.MethodPost, "/app/reload", nil)
	agenttest.WantErr(t, "reload", err, errdefs.ErrConflict, "app_not_configured")
	_, err = app(ctx, f, http.MethodPost, "/app/restart", agentproto.AppRestartRequest{})
	agenttest.WantErr(t, "restart", err, errdefs.ErrConflict, "app_not_configured")
	_, err = f.Client.AppLogs(ctx, "web", 10, false)
	agenttest.WantErr(t, "logs", err, errdefs.ErrNotFound, "app_process_not_found")
	if err := f.Client.AppStop(ctx); err != nil {
		t.Errorf("stop of nothing: %v", err)
	}
	for _, dir := range []string{"relative", "/outside/the/root", f.Work + "/../work"} {
		_, err = app(ctx, f, http.MethodPut, "/app", agentproto.AppConfig{Dir: dir})
		agenttest.WantErr(t, "dir "+dir, err, errdefs.ErrInvalid, "invalid_app_dir")
	}
	_, err = app(ctx, f, http.MethodPut, "/app", agentproto.AppConfig{Dir: f.Work, Env: map[string]string{"A=B": "c"}})
	agenttest.WantErr(t, "bad env", err, errdefs.ErrInvalid, "invalid_env")

	// A client of an agent without the feature does not ask it.
	info := agentproto.Current()
	info.Features = slices.DeleteFunc(info.Features, func(s string) bool { return s == agentproto.FeatureApp })
	old := agentclient.New("unix", f.Sock, agenttest.Token, agentclient.Speaking(info))
	defer old.Close()
	_, err = old.AppStatus(ctx)
	agenttest.WantErr(t, "status from an old agent", err, errdefs.ErrUnsupported, "agent_too_old")
	_, err = old.AppLogs(ctx, "web", 1, false)
	if !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("logs from an old agent: %v", err)
	}
}
