package proc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/agent/httpio"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// maxWait bounds one wait request; a client waits longer by asking again.
const maxWait = 10 * time.Minute

// signals are the signals a client may send a process.
var signals = map[string]unix.Signal{
	"TERM": unix.SIGTERM, "KILL": unix.SIGKILL, "INT": unix.SIGINT, "HUP": unix.SIGHUP,
	"QUIT": unix.SIGQUIT, "USR1": unix.SIGUSR1, "USR2": unix.SIGUSR2, "STOP": unix.SIGSTOP,
	"CONT": unix.SIGCONT, "WINCH": unix.SIGWINCH,
}

func (s *Service) handleStartProcess(w http.ResponseWriter, r *http.Request) {
	var req agentproto.ProcessRequest
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkProcessRequest(req); err != nil {
		s.writeError(w, r, err)
		return
	}
	spec, err := s.Check(agentproto.ExecRequest{Cmd: req.Cmd, Env: withTerm(req.Env, req.PTY != nil), Cwd: req.Cwd, Root: req.Root})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.startBackground(spec, req.Tag, req.PTY)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusCreated, p)
}

// checkProcessRequest is what the agent, and the API before it, refuse.
func checkProcessRequest(req agentproto.ProcessRequest) error {
	if len(req.Tag) > maxTag || strings.ContainsRune(req.Tag, 0) {
		return errdefs.Invalid("invalid_tag", "tag must be at most %d bytes without NUL", maxTag)
	}
	if t := req.PTY; t != nil && (t.Rows == 0 || t.Cols == 0 || t.Rows > 1000 || t.Cols > 1000) {
		return errdefs.Invalid("invalid_pty", "pty rows and cols must be from 1 to 1000")
	}
	return nil
}

// withTerm gives a program on a PTY a TERM unless the request set one.
func withTerm(env map[string]string, pty bool) map[string]string {
	if !pty || env["TERM"] != "" {
		return env
	}
	out := map[string]string{"TERM": "xterm-256color"}
	for k, v := range env {
		out[k] = v
	}
	return out
}

func (s *Service) handleListProcesses(w http.ResponseWriter, r *http.Request) {
	httpio.WriteJSON(w, http.StatusOK, agentproto.ProcessList{Processes: s.procs.list()})
}

// process finds the process the path names.
func (s *Service) process(r *http.Request) (*proc, error) {
	pid, err := strconv.Atoi(r.PathValue("pid"))
	if err != nil || pid <= 0 {
		return nil, errdefs.Invalid("invalid_pid", "%q is not a process id", r.PathValue("pid"))
	}
	return s.procs.get(pid)
}

func (s *Service) handleGetProcess(w http.ResponseWriter, r *http.Request) {
	p, err := s.process(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, p.snapshot())
}

// handleProcessOutput answers GET /processes/{pid}/output?cursor=&follow=:
// the output from cursor on as NDJSON agentproto.OutputEvents; with follow, it
// goes on as output arrives and ends with an "exit" event.
func (s *Service) handleProcessOutput(w http.ResponseWriter, r *http.Request) {
	p, err := s.process(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	cursor, err := parseCursor(q.Get("cursor"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	follow, _ := strconv.ParseBool(q.Get("follow"))
	ew := newEventWriter(w, r)
	ew.flush()
	for {
		evs, next, ended, wake := p.out.read(cursor)
		for _, ev := range evs {
			ew.event(ev)
		}
		cursor = next
		if ended {
			info := p.snapshot()
			ew.event(agentproto.OutputEvent{Type: agentproto.Exit, Offset: cursor, Process: &info})
		}
		ew.flush()
		if ended || !follow || ew.err != nil {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
}

func parseCursor(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errdefs.Invalid("invalid_cursor", "cursor must be a byte offset, 0 or more")
	}
	return n, nil
}

// handleProcessStdin answers POST /processes/{pid}/stdin?close=: the body
// goes to the process's stdin; close=true closes it afterwards. With
// stream=true (FeatureStdinStream) the answer's header goes out first and
// the body, unbounded, goes to stdin as it arrives, for as long as the
// request lasts: a terminal's input is one request, not one per keystroke.
func (s *Service) handleProcessStdin(w http.ResponseWriter, r *http.Request) {
	p, err := s.process(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if stream, _ := strconv.ParseBool(r.URL.Query().Get("stream")); stream {
		s.streamStdin(w, r, p)
		return
	}
	closeAfter, _ := strconv.ParseBool(r.URL.Query().Get("close"))
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes)
	if err := p.writeStdin(r.Context(), body, closeAfter); err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, p.snapshot())
}

// streamStdin copies the body to p's stdin until the body or the request
// ends, and then answers the process as it is. What stops the copy early
// (the process closed its input) ends the answer with that error.
func (s *Service) streamStdin(w http.ResponseWriter, r *http.Request, p *proc) {
	p.mu.Lock()
	open := p.stdin != nil
	p.mu.Unlock()
	if !open {
		s.writeError(w, r, errdefs.Conflict("stdin_closed", "process %d's stdin is closed", p.info.PID))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if http.NewResponseController(w).Flush() != nil {
		return
	}
	if err := p.writeStdin(r.Context(), r.Body, false); err != nil && r.Context().Err() == nil {
		_, code, msg := errdefs.HTTPStatus(err)
		json.NewEncoder(w).Encode(agentproto.Error{Error: agentproto.ErrorBody{Code: code, Message: msg}})
		return
	}
	json.NewEncoder(w).Encode(p.snapshot())
}

// writeStdin copies body to stdin, giving up when ctx ends.
func (p *proc) writeStdin(ctx context.Context, body io.Reader, closeAfter bool) error {
	p.mu.Lock()
	in := p.stdin
	p.mu.Unlock()
	if in == nil {
		return errdefs.Conflict("stdin_closed", "process %d's stdin is closed", p.info.PID)
	}
	stop := context.AfterFunc(ctx, func() { _ = in.SetWriteDeadline(time.Now()) })
	_, err := io.Copy(in, body)
	stop()
	_ = in.SetWriteDeadline(time.Time{})
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return errdefs.New(errdefs.ErrTooLarge, "request_too_large", "stdin writes are at most %d bytes per request", tooBig.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errdefs.Unavailable("stdin_timeout", "process %d did not read its stdin before the request ended", p.info.PID)
	case errors.Is(err, unix.EPIPE), errors.Is(err, os.ErrClosed):
		return errdefs.Conflict("stdin_closed", "process %d's stdin is closed", p.info.PID)
	case err != nil:
		return err
	}
	if closeAfter {
		if p.pty != nil {
			// A terminal has no end of input to close: send EOF (^D).
			_, err := in.Write([]byte{4})
			return err
		}
		p.closeStdin()
	}
	return nil
}

func (s *Service) handleProcessSignal(w http.ResponseWriter, r *http.Request) {
	p, err := s.process(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req agentproto.SignalRequest
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	sig, ok := signals[strings.TrimPrefix(strings.ToUpper(req.Signal), "SIG")]
	if !ok {
		s.writeError(w, r, errdefs.Invalid("invalid_signal", "signal %q: use TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT or WINCH", req.Signal))
		return
	}
	info := p.snapshot()
	if !info.Running {
		s.writeError(w, r, errdefs.Conflict("process_exited", "process %d has exited", info.PID))
		return
	}
	target := info.PID
	if req.Group {
		target = -info.PID // its own group (or session): see procIO.sysProcAttr
	}
	if err := processThread().kill(target, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		s.writeError(w, r, errdefs.Wrap(errdefs.ErrUnavailable, "signal_failed", err, "could not signal process %d", info.PID))
		return
	}
	httpio.WriteJSON(w, http.StatusOK, p.snapshot())
}

func (s *Service) handleProcessResize(w http.ResponseWriter, r *http.Request) {
	p, err := s.process(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var size agentproto.TermSize
	if err := httpio.DecodeJSON(w, r, s.cfg.MaxRequestBytes, &size); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := p.resize(size); err != nil {
		s.writeError(w, r, err)
		return
	}
	httpio.WriteJSON(w, http.StatusOK, p.snapshot())
}

// resize changes the terminal's size; the kernel tells the foreground
// process group with SIGWINCH.
func (p *proc) resize(size agentproto.TermSize) error {
	if err := checkProcessRequest(agentproto.ProcessRequest{PTY: &size}); err != nil {
		return err
	}
	if p.pty == nil {
		return errdefs.Invalid("no_pty", "process %d has no terminal", p.info.PID)
	}
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return errdefs.Conflict("process_exited", "process %d's terminal is gone", p.info.PID)
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) { ioErr = setSize(int(fd), size) }); err != nil {
		return errdefs.Conflict("process_exited", "process %d's terminal is gone", p.info.PID)
	}
	return ioErr
}

// handleProcessWait answers GET /processes/{pid}/wait?timeout_ms=: the
// process once it has ended, or as it is when the timeout comes first.
func (s *Service) handleProcessWait(w http.ResponseWriter, r *http.Request) {
	p, err := s.process(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	timeout := maxWait
	if v := r.URL.Query().Get("timeout_ms"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			s.writeError(w, r, errdefs.Invalid("invalid_timeout", "timeout_ms must be 0 or more"))
			return
		}
		timeout = min(time.Duration(ms)*time.Millisecond, maxWait)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	p.waitFor(ctx)
	httpio.WriteJSON(w, http.StatusOK, p.snapshot())
}
