package sandbox

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// ValidateExec checks an exec request before it reaches the agent.
func ValidateExec(req api.ExecRequest) error {
	if len(req.Cmd) == 0 || req.Cmd[0] == "" {
		return errdefs.Invalid("invalid_cmd", "cmd must name a program, e.g. [\"sh\", \"-c\", \"echo hi\"]")
	}
	for _, a := range req.Cmd {
		if strings.ContainsRune(a, 0) {
			return errdefs.Invalid("invalid_cmd", "cmd arguments must not contain NUL bytes")
		}
	}
	if req.TimeoutMS < 0 {
		return errdefs.Invalid("invalid_timeout", "timeout_ms must not be negative")
	}
	if strings.ContainsRune(req.Cwd, 0) {
		return errdefs.Invalid("invalid_path", "cwd must not contain NUL bytes")
	}
	return validateEnv(req.Env)
}

// ExecStream starts a command and returns its event stream; Close ends
// the command if it still runs.
func (s *Service) ExecStream(ctx context.Context, id string, req api.ExecRequest) (Stream[api.ExecEvent], error) {
	if err := ValidateExec(req); err != nil {
		return nil, err
	}
	c, err := s.open(ctx, id, "exec")
	if err != nil {
		return nil, err
	}
	e := &execStream{s: s, ctx: c.ctx, rec: c.rec}
	e.before, e.counts = s.observeOOM(ctx, c.rec)
	if e.st, err = c.agent.Exec(ctx, req); err != nil {
		return nil, c.end(err)
	}
	return &stream[api.ExecEvent]{c: c, next: e.Next, close: e.st.Close}, nil
}

// Exec runs a command to completion and returns its output, each stream
// bounded by MaxOutputBytes; the rest is read and dropped, and the result
// says it was truncated.
func (s *Service) Exec(ctx context.Context, id string, req api.ExecRequest) (api.ExecResult, error) {
	st, err := s.ExecStream(ctx, id, req)
	if err != nil {
		return api.ExecResult{}, err
	}
	defer st.Close()
	out := boundedBuffer{max: s.cfg.MaxOutputBytes}
	errb := boundedBuffer{max: s.cfg.MaxOutputBytes}
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return api.ExecResult{}, errdefs.Unavailable("agent_lost", "the sandbox agent ended the stream before the command exited")
		}
		if err != nil {
			return api.ExecResult{}, err
		}
		switch ev.Type {
		case api.ExecStdout:
			out.write(ev.Data)
		case api.ExecStderr:
			errb.write(ev.Data)
		case api.ExecExit:
			if ev.Exit == nil {
				return api.ExecResult{}, errdefs.Unavailable("agent_lost", "the sandbox agent sent an empty exit event")
			}
			res := *ev.Exit
			res.Stdout, res.StdoutTruncated = out.String(), out.truncated
			res.Stderr, res.StderrTruncated = errb.String(), errb.truncated
			return res, nil
		}
	}
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	strings.Builder
	max       int
	truncated bool
}

func (b *boundedBuffer) write(p []byte) {
	if room := b.max - b.Len(); len(p) > room {
		p = p[:max(room, 0)]
		b.truncated = true
	}
	b.Write(p)
}
