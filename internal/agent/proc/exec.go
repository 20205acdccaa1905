package proc

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// DefaultPath is a command's PATH when neither the envelope nor the request
// sets one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

const (
	// chunkSize bounds one stdout or stderr event: a widened pipe's
	// capacity (pipes.go), so a fast writer is read in one go.
	chunkSize = pipeBytes
	// DrainTime is how long the pipes are read after the command exits, so
	// a background process that keeps them open cannot hold the call.
	DrainTime = 250 * time.Millisecond
	// sweepMax bounds the final non-blocking read of a pipe after DrainTime.
	sweepMax = 1 << 20
)

// Spec is a checked exec request (Check).
type Spec struct {
	Argv    []string
	Env     []string
	Path    string // PATH of the command's env, to find Argv[0]
	Dir     string // real working directory
	Stdin   string
	Timeout time.Duration
	Cred    *syscall.Credential // who it runs as: nil, the agent's own ids
}

func (s *Service) handleExec(w http.ResponseWriter, r *http.Request) {
	var req agentproto.ExecRequest
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	spec, err := s.Check(req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ew := newEventWriter(w, r)
	ew.flush()
	res := s.run(r.Context(), spec, ew)
	ew.event(agentproto.ExecEvent{Type: agentproto.Exit, Exit: &res})
	ew.flush()
	s.log.Info("exec", "program", spec.Argv[0], "exit_code", res.ExitCode,
		"signal", res.Signal, "timed_out", res.TimedOut, "duration_ms", res.DurationMS)
}

// Check validates req and builds its environment and directory.
func (s *Service) Check(req agentproto.ExecRequest) (Spec, error) {
	if len(req.Cmd) == 0 || req.Cmd[0] == "" {
		return Spec{}, errdefs.Invalid("invalid_cmd", "cmd is empty")
	}
	for _, a := range req.Cmd {
		if strings.IndexByte(a, 0) >= 0 {
			return Spec{}, errdefs.Invalid("invalid_cmd", "cmd holds a NUL byte")
		}
	}
	if req.TimeoutMS < 0 {
		return Spec{}, errdefs.Invalid("invalid_timeout", "timeout_ms must not be negative")
	}
	envm := make(map[string]string, len(s.cfg.Env)+len(req.Env)+1)
	for k, v := range s.cfg.Env {
		envm[k] = v
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return Spec{}, errdefs.Invalid("invalid_env", "env name %q is invalid", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return Spec{}, errdefs.Invalid("invalid_env", "env %s holds a NUL byte", k)
		}
		envm[k] = v
	}
	if _, ok := envm["PATH"]; !ok {
		envm["PATH"] = DefaultPath
	}
	env := make([]string, 0, len(envm))
	for k, v := range envm {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)

	cwd := req.Cwd
	if cwd == "" {
		cwd = s.root.Workdir()
	}
	p, err := s.root.Resolve(cwd)
	if err != nil {
		return Spec{}, err
	}
	dir, err := s.root.RealDir(p)
	if err != nil {
		return Spec{}, err
	}
	cred, err := s.credential(req.Root)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Cred:    cred,
		Argv:    req.Cmd,
		Env:     env,
		Path:    envm["PATH"],
		Dir:     dir,
		Stdin:   req.Stdin,
		Timeout: time.Duration(req.TimeoutMS) * time.Millisecond,
	}, nil
}

// run starts spec, streams its output to ew and returns its result. The
// process gets its own process group, which is SIGKILLed at the timeout
// or when ctx (the request) ends.
func (s *Service) run(ctx context.Context, spec Spec, ew *eventWriter) agentproto.ExitStatus {
	start := time.Now()
	result := func(code int, msg string) agentproto.ExitStatus {
		return agentproto.ExitStatus{ExitCode: code, Error: msg, DurationMS: since(start)}
	}
	prog, code, msg := lookPath(spec.Argv[0], spec.Dir, spec.Path)
	if code != 0 {
		return result(code, msg)
	}

	var pipes [3][2]*os.File // stdin, stdout, stderr: {read, write}
	defer func() {
		for _, p := range pipes {
			for _, f := range p {
				if f != nil {
					f.Close()
				}
			}
		}
	}()
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			return result(126, "hutch: cannot make a pipe: "+err.Error())
		}
		pipes[i] = [2]*os.File{r, w}
		if i > 0 {
			widenPipe(r)
		}
	}
	attr := &syscall.ProcAttr{
		Dir: spec.Dir,
		Env: spec.Env,
		// Fd puts the child's ends in blocking mode; the agent's ends stay
		// in the poller, so read deadlines work on them.
		Files: []uintptr{pipes[0][0].Fd(), pipes[1][1].Fd(), pipes[2][1].Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Credential: spec.Cred},
	}
	pid, exited, err := s.Fork(prog, spec.Argv, attr)
	pipes[0][0].Close()
	pipes[1][1].Close()
	pipes[2][1].Close()
	if err != nil {
		if errors.Is(err, ErrShuttingDown) {
			return result(126, "hutch: the agent is shutting down")
		}
		code := 126
		if errors.Is(err, unix.ENOENT) {
			code = 127
		}
		return result(code, "hutch: "+spec.Argv[0]+": "+err.Error())
	}

	go func(w *os.File, data string) {
		if data != "" {
			w.WriteString(data)
		}
		w.Close()
	}(pipes[0][1], spec.Stdin)

	chunks := make(chan agentproto.ExecEvent, 16)
	spare := make(chan []byte, cap(chunks)+2)
	var pumps sync.WaitGroup
	pumps.Add(2)
	go pump(pipes[1][0], agentproto.Stdout, chunks, spare, &pumps)
	go pump(pipes[2][0], agentproto.Stderr, chunks, spare, &pumps)
	go func() { pumps.Wait(); close(chunks) }()

	// The kills do not wait for the loop below, which may be blocked
	// writing to a slow client. A group outlives its leader only while a
	// member lives, so -pid never names another group.
	killGroup := func() { _ = processThread().kill(-pid, unix.SIGKILL) }
	var timedOut atomic.Bool
	stopTimeout := func() bool { return false }
	if spec.Timeout > 0 {
		t := time.AfterFunc(spec.Timeout, func() { timedOut.Store(true); killGroup() })
		stopTimeout = t.Stop
	}
	stopCancelKill := context.AfterFunc(ctx, killGroup)
	defer stopTimeout()
	defer stopCancelKill()

	var ws unix.WaitStatus
	for chunks != nil || exited != nil {
		select {
		case ev, ok := <-chunks:
			if !ok {
				chunks = nil
				continue
			}
			ew.event(ev)
			if cap(ev.Data) == chunkSize {
				// Written: a writer does not keep what it was given.
				select {
				case spare <- ev.Data:
				default:
				}
			}
			if len(chunks) == 0 {
				ew.flush()
			}
		case ws = <-exited:
			exited = nil
			// What the command left running in its group is no longer
			// the timeout's or the request's to kill.
			stopTimeout()
			stopCancelKill()
			end := time.Now().Add(DrainTime)
			pipes[1][0].SetReadDeadline(end)
			pipes[2][0].SetReadDeadline(end)
		}
	}
	res := result(0, "")
	res.TimedOut = timedOut.Load()
	res.ExitCode, res.Signal = ExitStatus(ws)
	return res
}

// Fork starts prog with argv (under the command rlimits) through the
// reaper, and limits and places it right after it has exec'd; if that
// fails it dies, and the reaper reaps it as an orphan. The channel
// receives its exit status once. Once Drain was called, it refuses with
// ErrShuttingDown.
func (s *Service) Fork(prog string, argv []string, attr *syscall.ProcAttr) (int, <-chan unix.WaitStatus, error) {
	argv, prog = s.withRlimits(argv, prog)
	return s.startProcess(func() (int, error) {
		pid, err := syscall.ForkExec(prog, argv, attr)
		if err != nil {
			return 0, err
		}
		if err := s.settle(pid); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return 0, err
		}
		return pid, nil
	})
}

// withRlimits is the command line that runs prog with argv under the
// command rlimits: through prlimit(1), which sets them on itself and execs
// the command, so there is no moment without them.
func (s *Service) withRlimits(argv []string, prog string) ([]string, string) {
	if len(s.cfg.CommandRlimits) == 0 || s.cfg.Prlimit == "" {
		return argv, prog
	}
	return append(confine.PrlimitArgs(s.cfg.Prlimit, s.cfg.CommandRlimits), append([]string{prog}, argv[1:]...)...), s.cfg.Prlimit
}

// settle applies what each command gets right after it starts: its
// rlimits (unless prlimit(1) set them already) and its cgroup.
func (s *Service) settle(pid int) error {
	if len(s.cfg.CommandRlimits) > 0 && s.cfg.Prlimit == "" {
		if err := setRlimits(pid, s.cfg.CommandRlimits); err != nil {
			return err
		}
	}
	if s.cfg.Adopt != nil {
		return s.cfg.Adopt(pid)
	}
	return nil
}

// pump reads f into events of type typ until EOF or the drain deadline;
// then it sweeps what is already in the pipe without waiting, so output
// the command wrote before it exited is never lost to a slow reader.
//
// A large read goes out in the buffer it was read into, and the next read
// takes a buffer the writer is done with from spare (or a new one), so
// output at pipe speed is not copied once more nor allocated per chunk; a
// small read is copied out, so a trickle does not hold a chunk per event.
func pump(f *os.File, typ string, out chan<- agentproto.ExecEvent, spare chan []byte, wg *sync.WaitGroup) {
	defer wg.Done()
	next := func() []byte {
		select {
		case b := <-spare:
			return b[:chunkSize]
		default:
			return make([]byte, chunkSize)
		}
	}
	buf := next()
	send := func(n int) {
		if n < chunkSize/4 {
			out <- agentproto.ExecEvent{Type: typ, Data: bytes.Clone(buf[:n])}
			return
		}
		out <- agentproto.ExecEvent{Type: typ, Data: buf[:n]}
		buf = next()
	}
	for {
		n, err := f.Read(buf)
		if n > 0 {
			send(n)
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			sweep(f, &buf, send)
		}
		return
	}
}

// sweep reads what is left in f without waiting, up to sweepMax, into
// *buf, handing each read to send.
func sweep(f *os.File, buf *[]byte, send func(n int)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for total := 0; total < sweepMax; {
		var n int
		if rc.Control(func(fd uintptr) { n, _ = unix.Read(int(fd), *buf) }) != nil || n <= 0 {
			return
		}
		send(n)
		total += n
	}
}

// lookPath finds prog as a shell would, with the command's own PATH; a
// relative path with a slash is relative to dir. It answers the exit code
// a shell gives when it cannot run prog: 127 not found, 126 not executable.
func lookPath(prog, dir, pathEnv string) (string, int, string) {
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		switch err := executable(p); {
		case err == nil:
			return p, 0, ""
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			return "", 127, "hutch: " + prog + ": no such file or directory"
		default:
			return "", 126, "hutch: " + prog + ": " + err.Error()
		}
	}
	denied := ""
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, prog)
		switch err := executable(p); {
		case err == nil:
			return p, 0, ""
		case denied == "" && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR):
			denied = "hutch: " + prog + ": " + err.Error()
		}
	}
	if denied != "" {
		return "", 126, denied
	}
	return "", 127, "hutch: " + prog + ": command not found"
}

// executable reports why p cannot be executed, or nil.
func executable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.EISDIR
	}
	return unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS)
}

func since(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}
