package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/proc"
)

// procLoop is one supervision of an app process: its runs, one after
// another, owned by one goroutine (runLoop) until it is stopped or the
// process crashes.
type procLoop struct {
	stop     chan struct{} // closed to stop it
	stopOnce sync.Once
	done     chan struct{} // closed once it has ended and its last run is gone
}

func newProcLoop() *procLoop {
	return &procLoop{stop: make(chan struct{}), done: make(chan struct{})}
}

// halt asks the loop to stop its run and end; it does not wait.
func (l *procLoop) halt() { l.stopOnce.Do(func() { close(l.stop) }) }

// appRun is one run of an app process: /bin/sh -c in a process group of
// its own.
type appRun struct {
	pid    int
	exited <-chan unix.WaitStatus
	outs   []*os.File
	pumps  sync.WaitGroup
}

// runLoop owns p's runs under l: it starts one, waits for it to end,
// and after the backoff starts the next, until l is stopped or the
// process fails fast timing.FastLimit times in a row (crashed). why, when
// set, is the reason of its first start for the log ("" for the
// process's first run).
func (sv *Supervisor) runLoop(p *appProc, spec procSpec, l *procLoop, why string) {
	defer sv.wg.Done()
	defer close(l.done)
	t := sv.timing
	var delay time.Duration
	fast := 0
	for {
		select {
		case <-l.stop:
			sv.setState(p, func(p *appProc) { p.state, p.message = agentproto.AppStopped, "" })
			return
		default:
		}
		if why != "" {
			p.log.system("--- restarted (" + why + ") ---")
		}
		r, err := sv.startRun(p, spec)
		started := time.Now()
		var ws unix.WaitStatus
		stopped := false
		if err != nil {
			if errors.Is(err, proc.ErrShuttingDown) {
				sv.setState(p, func(p *appProc) { p.state, p.message = agentproto.AppStopped, "" })
				return
			}
			p.log.system("--- could not start: " + errMessage(err) + " ---")
			ws = unix.WaitStatus(127 << 8) // as a shell answers a command it cannot run
		} else {
			sv.setState(p, func(p *appProc) {
				p.state, p.pid, p.message = agentproto.AppStarting, r.pid, ""
				p.startedAt, p.restarts = &started, p.restarts+min(p.runs, 1)
				p.runs++
			})
			ws, stopped = sv.waitRun(p, r, l)
		}
		code, sig := proc.ExitStatus(ws)
		ended := time.Now().UTC()
		ran := ended.Sub(started)
		sv.setState(p, func(p *appProc) {
			p.pid, p.lastExitCode, p.lastExitSignal, p.lastExitAt = 0, &code, sig, &ended
		})
		if stopped {
			p.log.system("--- stopped ---")
			sv.setState(p, func(p *appProc) { p.state, p.message = agentproto.AppStopped, "" })
			return
		}
		if ran < t.FastWindow {
			fast++
		} else {
			fast = 0
		}
		if fast >= t.FastLimit {
			msg := fmt.Sprintf("exited %d times within %s of starting; last %s", fast, t.FastWindow, exitText(code, sig))
			p.log.system("--- crashed: " + msg + " ---")
			sv.setState(p, func(p *appProc) { p.state, p.message = agentproto.AppCrashed, msg })
			return
		}
		switch {
		case ran >= t.ResetAfter || delay == 0:
			delay = t.BackoffMin
		default:
			delay = min(2*delay, t.BackoffMax)
		}
		sv.setState(p, func(p *appProc) {
			p.state, p.message = agentproto.AppBackoff, fmt.Sprintf("%s; restarting in %s", exitText(code, sig), delay)
		})
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-l.stop:
			timer.Stop()
			p.log.system("--- stopped ---")
			sv.setState(p, func(p *appProc) { p.state, p.message = agentproto.AppStopped, "" })
			return
		}
		why = exitText(code, sig)
	}
}

// exitText reads like "exit code 1" or "killed by SIGKILL".
func exitText(code int, sig string) string {
	if sig != "" {
		return "killed by " + sig
	}
	return fmt.Sprintf("exit code %d", code)
}

// startRun starts one run of spec: /bin/sh -c with the command, in the app
// directory, as the app's credential (else as the commands' user), with
// the commands' rlimits and cgroup, stdin from /dev/null and its output
// into p's log. The environment goes only to the process: never on its
// command line, never in a file.
func (sv *Supervisor) startRun(p *appProc, spec procSpec) (*appRun, error) {
	es, err := sv.commands.Check(agentproto.ExecRequest{Cmd: []string{"/bin/sh", "-c", spec.command}, Env: spec.env, Cwd: spec.dir})
	if err != nil {
		return nil, err
	}
	if sv.cred != nil {
		es.Cred = sv.cred
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devNull.Close()
	var child, outs []*os.File
	closeAll := func() {
		for _, f := range append(child, outs...) {
			f.Close()
		}
	}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("make a pipe: %w", err)
		}
		outs, child = append(outs, r), append(child, w)
	}
	attr := &syscall.ProcAttr{
		Dir:   es.Dir,
		Env:   es.Env,
		Files: []uintptr{devNull.Fd(), child[0].Fd(), child[1].Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Credential: es.Cred},
	}
	pid, exited, err := sv.commands.Fork(es.Argv[0], es.Argv, attr)
	for _, f := range child {
		f.Close()
	}
	if err != nil {
		for _, f := range outs {
			f.Close()
		}
		return nil, err
	}
	r := &appRun{pid: pid, exited: exited, outs: outs}
	r.pumps.Go(func() { pumpLog(outs[0], agentproto.Stdout, p.log) })
	r.pumps.Go(func() { pumpLog(outs[1], agentproto.Stderr, p.log) })
	sv.log.Info("app process started", "name", spec.name, "pid", pid)
	return r, nil
}

// waitRun waits for r to end, marking p running once it has lasted the
// fast-fail window; when l is stopped first, it stops r. Either way, what
// r left running in its process group is killed, and its output is read
// to the end (or for proc.DrainTime) before it returns.
func (sv *Supervisor) waitRun(p *appProc, r *appRun, l *procLoop) (ws unix.WaitStatus, stopped bool) {
	up := time.NewTimer(sv.timing.FastWindow)
	defer up.Stop()
	exited := false
	for !exited {
		select {
		case ws = <-r.exited:
			exited = true
		case <-up.C:
			sv.setState(p, func(p *appProc) {
				if p.state == agentproto.AppStarting {
					p.state = agentproto.AppRunning
				}
			})
		case <-l.stop:
			ws, stopped, exited = sv.terminate(p, r), true, true
		}
	}
	if !stopped {
		sv.setState(p, func(p *appProc) { p.state = agentproto.AppExited })
	}
	killGroup(r.pid)
	deadline := time.Now().Add(proc.DrainTime)
	for _, f := range r.outs {
		_ = f.SetReadDeadline(deadline)
	}
	r.pumps.Wait()
	for _, f := range r.outs {
		f.Close()
	}
	code, sig := proc.ExitStatus(ws)
	sv.log.Info("app process exited", "name", p.spec.name, "pid", r.pid, "exit_code", code, "signal", sig, "stopped", stopped)
	return ws, stopped
}

// groupGoneWait bounds how long a run's end waits for what it left in
// its process group to die.
const groupGoneWait = 2 * time.Second

// killGroup SIGKILLs what is left of process group pgid once its leader
// has exited, and waits until none of it lives (zombies waiting for the
// reaper do not count), so a run leaves nothing behind: no child holding
// the port the next run listens on. The group outlives its leader while
// a member lives, so -pgid names no other group.
func killGroup(pgid int) {
	deadline := time.Now().Add(groupGoneWait)
	for {
		err := proc.Kill(-pgid, unix.SIGKILL)
		if errors.Is(err, unix.ESRCH) || !groupLives(pgid) || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupLives reports whether a process of group pgid is alive, as /proc
// shows it.
func groupLives(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	want := strconv.Itoa(pgid)
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp …; comm may hold anything but ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// terminate sends r's process group SIGTERM, then SIGKILL after
// timing.StopGrace, and returns the leader's exit status. The leader is
// signalled by its pid too: it may have left its group (setpgid), and it
// is not reaped before r.exited delivers, so the pid is still its.
func (sv *Supervisor) terminate(p *appProc, r *appRun) unix.WaitStatus {
	sv.setState(p, func(p *appProc) { p.state, p.message = agentproto.AppStopped, "stopping" })
	signal := func(sig unix.Signal) {
		_ = proc.Kill(-r.pid, sig)
		_ = proc.Kill(r.pid, sig)
	}
	signal(unix.SIGTERM)
	grace := time.NewTimer(sv.timing.StopGrace)
	defer grace.Stop()
	select {
	case ws := <-r.exited:
		return ws
	case <-grace.C:
		signal(unix.SIGKILL)
		return <-r.exited
	}
}
