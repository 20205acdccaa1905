// Package launch starts hutch-agent for a driver, hands it its bootstrap
// envelope and waits for its ready line, and keeps the small files a
// driver writes in a sandbox's directory (its state and the envelope a
// restart needs).
package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/envelope"
	"github.com/hutchdev/hutch/internal/agent/nsinit"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/runtime/driver/hostproc"
)

// ReadyTimeout bounds how long Handshake waits for the agent's ready line.
const ReadyTimeout = 15 * time.Second

// Agent is an agent process that was started and waits for its envelope
// on stdin.
type Agent struct {
	Pid       int
	StartTime uint64 // hostproc.StartTime, which tells the pid from a reused one
	Log       string // the agent's stderr
	stdin     io.WriteCloser
	stdout    io.ReadCloser
}

// Start starts cmd (whose SysProcAttr, Dir and Env the driver has set) with
// its stderr appended to logPath and pipes on stdin and stdout. The agent
// outlives this process across control-plane restarts; until then it is
// reaped here when it exits (reap.go).
func Start(cmd *exec.Cmd, logPath string) (*Agent, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open agent log: %w", err)
	}
	defer logf.Close()
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	var pidfd int
	askPidfd(cmd, &pidfd)
	if err := cmd.Start(); err != nil {
		stdin.Close()
		stdout.Close()
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "could not start the sandbox agent")
	}
	a := &Agent{Pid: cmd.Process.Pid, Log: logPath, stdin: stdin, stdout: stdout}
	a.StartTime, _ = hostproc.StartTime(a.Pid)
	reapLater(cmd, pidfd)
	return a, nil
}

// StartStaged starts cmd, the agent binary as the namespace driver's
// first stage (nsinit.Spawn: cmd's Args end in nsinit.SpawnArg and its
// spec), which starts the agent as its sibling, reports its pid on stdout
// and exits; the agent is this process's child, reaped here like Start's
// (a stage of an older agent binary leaves it to the host's init), and
// the Agent returned is it, with the pipes and log Start would give it.
func StartStaged(cmd *exec.Cmd, logPath string) (*Agent, error) {
	stage, err := Start(cmd, logPath)
	if err != nil {
		return nil, err
	}
	pid, err := readSpawned(stage.stdout)
	if err != nil {
		stage.Close()
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			reapChild(pid)
		}
		return nil, stage.failed(err)
	}
	a := &Agent{Pid: pid, Log: logPath, stdin: stage.stdin, stdout: stage.stdout}
	a.StartTime, _ = hostproc.StartTime(pid)
	reapChild(pid)
	return a, nil
}

// readSpawned reads the first stage's line, one byte at a time so that
// nothing the agent writes after it is taken, within ReadyTimeout.
func readSpawned(stdout io.Reader) (int, error) {
	if f, ok := stdout.(*os.File); ok {
		_ = f.SetReadDeadline(time.Now().Add(ReadyTimeout))
		defer f.SetReadDeadline(time.Time{})
	}
	var line []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(stdout, b[:]); err != nil {
			return 0, fmt.Errorf("the agent's first stage did not report the agent: %w", err)
		}
		if b[0] == '\n' {
			break
		}
		if line = append(line, b[0]); len(line) > 4096 {
			return 0, errors.New("the agent's first stage reported an overlong line")
		}
	}
	var sp nsinit.Spawned
	if err := json.Unmarshal(line, &sp); err != nil {
		return 0, fmt.Errorf("the agent's first stage's report %q: %w", line, err)
	}
	if sp.Error != "" || sp.Pid <= 0 {
		return sp.Pid, fmt.Errorf("the agent's first stage: %s", sp.Error)
	}
	return sp.Pid, nil
}

// Handshake sends ev to the agent and waits for its ready line. Either way
// it closes the pipes.
func (a *Agent) Handshake(ctx context.Context, ev *envelope.Envelope) error {
	defer a.Close()
	if err := envelope.Encode(a.stdin, ev); err != nil {
		return a.failed(err)
	}
	a.stdin.Close()
	if err := waitReady(ctx, a.stdout); err != nil {
		return a.failed(err)
	}
	return nil
}

// Close closes the pipes; an agent still waiting for its envelope then
// exits.
func (a *Agent) Close() {
	a.stdin.Close()
	a.stdout.Close()
}

func waitReady(ctx context.Context, stdout io.Reader) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	type result struct {
		r   agentproto.Ready
		err error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		var r agentproto.Ready
		if err == nil {
			err = json.Unmarshal(line, &r)
		}
		ch <- result{r, err}
	}()
	select {
	case res := <-ch:
		switch {
		case res.err != nil:
			return fmt.Errorf("agent exited before it was ready: %w", res.err)
		case !res.r.Ready:
			return fmt.Errorf("agent refused to start: %s", res.r.Error)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agent not ready: %w", ctx.Err())
	}
}

func (a *Agent) failed(err error) error {
	if tail := logTail(a.Log, 512); tail != "" {
		err = fmt.Errorf("%w; agent log: %s", err, tail)
	}
	return errdefs.Wrap(errdefs.ErrUnavailable, "driver_failed", err, "the sandbox agent failed to start")
}

func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.TrimSpace(string(b))
}
