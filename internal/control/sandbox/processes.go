package sandbox

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentclient"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/logattr"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/quota"
	"github.com/hutchdev/hutch/internal/store"
)

// Bounds of a process request the API checks before the agent does.
const (
	maxTag     = 128
	maxPTYSide = 1000
	// waitSlice is how long one wait request of a watcher lasts.
	waitSlice = 5 * time.Minute
)

// ValidateProcess checks a process request before it reaches the agent.
func ValidateProcess(req api.ProcessRequest) error {
	if err := ValidateExec(api.ExecRequest{Cmd: req.Cmd, Env: req.Env, Cwd: req.Cwd}); err != nil {
		return err
	}
	if len(req.Tag) > maxTag || strings.ContainsRune(req.Tag, 0) {
		return errdefs.Invalid("invalid_tag", "tag must be at most %d bytes without NUL", maxTag)
	}
	if t := req.PTY; t != nil && (t.Rows == 0 || t.Cols == 0 || t.Rows > maxPTYSide || t.Cols > maxPTYSide) {
		return errdefs.Invalid("invalid_pty", "pty rows and cols must be from 1 to %d", maxPTYSide)
	}
	return nil
}

// procWatch owns the goroutines that follow background processes until
// they exit, to record their exits as events; they outlive the requests
// that started them, and end at Close. An agent with an event feed is
// followed once per sandbox (feed.go, stopped when the service lets go of
// the sandbox); an older one, with a waiting request per process
// (watching).
type procWatch struct {
	once     sync.Once
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	watching map[procKey]bool
}

// procKey names one process of one sandbox; the start time tells a pid
// the kernel gave again from the process that had it.
type procKey struct {
	sandbox string
	pid     int
	started time.Time
}

func (w *procWatch) start() {
	w.once.Do(func() {
		w.ctx, w.cancel = context.WithCancel(tenancy.System(context.Background()))
		w.watching = map[procKey]bool{}
	})
}

// StartProcess starts a background process in a running sandbox, records
// a process.started event and follows the process until it exits.
func (s *Service) StartProcess(ctx context.Context, id string, req api.ProcessRequest) (api.Process, error) {
	if err := ValidateProcess(req); err != nil {
		return api.Process{}, err
	}
	c, err := s.open(ctx, id, "processes.start")
	if err != nil {
		return api.Process{}, err
	}
	s.ensureFeed(c.rec, c.agent)
	p, err := c.agent.StartProcess(ctx, req)
	if err = c.end(err); err != nil {
		return api.Process{}, err
	}
	s.emit(ctx, c.rec, api.EventProcessStarted, fmt.Sprintf("process %d started: %s", p.PID, strings.Join(p.Cmd, " ")),
		map[string]any{"pid": p.PID, "tag": p.Tag, "cmd": p.Cmd, "pty": p.PTY})
	s.watchProcess(c.rec, c.agent, p)
	return p, nil
}

// ListProcesses lists a sandbox's processes, running and recently exited.
func (s *Service) ListProcesses(ctx context.Context, id string) (api.ProcessList, error) {
	return unary(ctx, s, id, "processes.list", func(ctx context.Context, a *agentclient.Client) (api.ProcessList, error) {
		return a.ListProcesses(ctx)
	})
}

// GetProcess describes one process.
func (s *Service) GetProcess(ctx context.Context, id string, pid int) (api.Process, error) {
	return unary(ctx, s, id, "processes.get", func(ctx context.Context, a *agentclient.Client) (api.Process, error) {
		return a.GetProcess(ctx, pid)
	})
}

// WriteStdin writes body to a process's input, then closes it with
// closeAfter.
func (s *Service) WriteStdin(ctx context.Context, id string, pid int, body io.Reader, closeAfter bool) (api.Process, error) {
	return unary(ctx, s, id, "processes.stdin", func(ctx context.Context, a *agentclient.Client) (api.Process, error) {
		return a.WriteStdin(ctx, pid, body, closeAfter)
	})
}

// SignalProcess sends a signal to a process or its group.
func (s *Service) SignalProcess(ctx context.Context, id string, pid int, req api.SignalRequest) (api.Process, error) {
	return unary(ctx, s, id, "processes.signal", func(ctx context.Context, a *agentclient.Client) (api.Process, error) {
		return a.SignalProcess(ctx, pid, req)
	})
}

// ResizeProcess resizes a process's terminal.
func (s *Service) ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) (api.Process, error) {
	return unary(ctx, s, id, "processes.resize", func(ctx context.Context, a *agentclient.Client) (api.Process, error) {
		return a.ResizeProcess(ctx, pid, size)
	})
}

// WaitProcess waits up to timeout for a process to end and describes it.
func (s *Service) WaitProcess(ctx context.Context, id string, pid int, timeout time.Duration) (api.Process, error) {
	return unary(ctx, s, id, "processes.wait", func(ctx context.Context, a *agentclient.Client) (api.Process, error) {
		return a.WaitProcess(ctx, pid, timeout)
	})
}

// ProcessOutput streams a process's output from a byte cursor; with
// follow it goes on until the process's output ends, with an exit event.
func (s *Service) ProcessOutput(ctx context.Context, id string, pid int, cursor int64, follow bool) (Stream[api.OutputEvent], error) {
	c, err := s.openHeld(ctx, id, "processes.output", quota.Stream)
	if err != nil {
		return nil, err
	}
	st, err := c.agent.ProcessOutput(ctx, pid, cursor, follow)
	if err != nil {
		return nil, c.end(err)
	}
	return &stream[api.OutputEvent]{c: c, next: st.Next, close: st.Close, recycle: st.Recycle}, nil
}

// watchProcess follows p until it exits and records a process.exited
// event; it stops, recording nothing, when the sandbox's agent goes away
// (the sandbox's own events tell why).
func (s *Service) watchProcess(rec *store.Sandbox, a *agentclient.Client, p api.Process) {
	if a.HasEvents() {
		return // the sandbox's event feed reports the exit
	}
	w := &s.procs
	w.start()
	key := procKey{rec.ID, p.PID, p.StartedAt}
	w.mu.Lock()
	if w.watching[key] {
		w.mu.Unlock()
		return
	}
	w.watching[key] = true
	w.mu.Unlock()
	w.wg.Go(func() {
		defer func() {
			w.mu.Lock()
			delete(w.watching, key)
			w.mu.Unlock()
		}()
		for w.ctx.Err() == nil {
			got, err := a.WaitProcess(w.ctx, p.PID, waitSlice)
			switch {
			case err != nil:
				return
			case !got.StartedAt.Equal(p.StartedAt):
				return // the pid is another process's now: the exit was missed
			case !got.Running:
				s.emitExited(w.ctx, rec, got)
				return
			}
		}
	})
}

func (s *Service) emitExited(ctx context.Context, rec *store.Sandbox, p api.Process) {
	code, dur := -1, time.Duration(0)
	if p.ExitCode != nil {
		code = *p.ExitCode
	}
	if p.EndedAt != nil {
		dur = p.EndedAt.Sub(p.StartedAt)
	}
	msg := fmt.Sprintf("process %d exited with status %d", p.PID, code)
	if p.Signal != "" {
		msg = fmt.Sprintf("process %d was killed by %s", p.PID, p.Signal)
	}
	s.emit(ctx, rec, api.EventProcessExited, msg, map[string]any{
		"pid": p.PID, "tag": p.Tag, "exit_code": code, "signal": p.Signal,
		"duration_ms": dur.Milliseconds(), "started_at": p.StartedAt.UTC().Format(time.RFC3339Nano),
	})
}

// reattachProcesses runs when a sandbox is recovered after a restart:
// running processes are followed again, and those that exited while no
// server watched get their process.exited event now, unless it is there.
func (s *Service) reattachProcesses(ctx context.Context, rec *store.Sandbox, a *agentclient.Client) {
	if a.HasEvents() {
		return // the event feed replays what it retained since
	}
	list, err := a.ListProcesses(ctx)
	if err != nil {
		s.log.Warn("list processes after recovery", logattr.Sandbox(rec.ID), "err", err)
		return
	}
	recorded, err := s.recordedExits(ctx, rec)
	if err != nil {
		s.log.Warn("read process events after recovery", logattr.Sandbox(rec.ID), "err", err)
		return
	}
	for _, p := range list.Processes {
		switch {
		case p.Running:
			s.watchProcess(rec, a, p)
		case !recorded[procKey{rec.ID, p.PID, p.StartedAt.UTC()}]:
			s.emitExited(ctx, rec, p)
		}
	}
}

// recordedExits lists the process exits already in a sandbox's events.
func (s *Service) recordedExits(ctx context.Context, rec *store.Sandbox) (map[procKey]bool, error) {
	out := map[procKey]bool{}
	q := store.EventQuery{SandboxID: rec.ID, Types: []string{api.EventProcessExited}}
	for {
		evs, next, err := s.store.ListEvents(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			pid, _ := e.Data["pid"].(float64)
			started, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(e.Data["started_at"]))
			out[procKey{rec.ID, int(pid), started.UTC()}] = true
		}
		if next == "" {
			return out, nil
		}
		q.After = next
	}
}

// Close stops following processes and the egress proxies, and records
// the egress decisions counted and the events dropped so far. The
// sandboxes go on.
func (s *Service) Close() {
	s.closeEgress()
	s.events.FlushDrops("")
	s.procs.start()
	s.procs.cancel()
	s.procs.wg.Wait()
}

// StdinStream is an open stream to a process's input, one call through
// the door until Close.
type StdinStream struct {
	st *agentclient.StdinStream
	c  *call
}

// StdinStream opens a stream to a process's input, for an agent that has
// one (otherwise an error of code
// agent_too_old, and the caller writes input request by request). It ends
// with ctx or Close.
func (s *Service) StdinStream(ctx context.Context, id string, pid int) (*StdinStream, error) {
	c, err := s.openHeld(ctx, id, "processes.stdin_stream", quota.Stream)
	if err != nil {
		return nil, err
	}
	st, err := c.agent.StdinStream(ctx, pid)
	if err != nil {
		return nil, c.end(err)
	}
	return &StdinStream{st: st, c: c}, nil
}

// Write sends p to the process.
func (s *StdinStream) Write(p []byte) (int, error) { return s.st.Write(p) }

// Close ends the stream (not the process's input) and the call.
func (s *StdinStream) Close(ctx context.Context) (api.Process, error) {
	p, err := s.st.Close(ctx)
	return p, s.c.end(err)
}
