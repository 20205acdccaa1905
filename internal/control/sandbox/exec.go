package sandbox

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/control/quota"
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
	switch req.OutputEncoding {
	case "", api.EncodingUTF8, api.EncodingBase64:
	default:
		return errdefs.Invalid("invalid_output_encoding", "output_encoding %q is not %q (text where the output is UTF-8, the default) or %q",
			req.OutputEncoding, api.EncodingUTF8, api.EncodingBase64)
	}
	return validateEnv(req.Env)
}

// ExecStream starts a command and returns its event stream, one of the
// streams its tenant holds open (quota.Stream); Close ends the command if
// it still runs.
func (s *Service) ExecStream(ctx context.Context, id string, req api.ExecRequest) (Stream[api.ExecEvent], error) {
	return s.execStream(ctx, id, req, true)
}

// execStream is ExecStream; held says the stream is the caller's to hold
// (Exec reads its own to the end).
func (s *Service) execStream(ctx context.Context, id string, req api.ExecRequest, held bool) (Stream[api.ExecEvent], error) {
	if err := ValidateExec(req); err != nil {
		return nil, err
	}
	// How the answer is encoded is the control plane's business; the
	// agent sends bytes and knows no such field.
	req.OutputEncoding = ""
	start := time.Now()
	open := s.open
	if held {
		open = func(ctx context.Context, id, op string) (*call, error) { return s.openHeld(ctx, id, op, quota.Stream) }
	}
	c, err := open(ctx, id, "exec")
	if err != nil {
		return nil, err
	}
	e := &execStream{s: s, ctx: c.ctx, rec: c.rec}
	e.before, e.counts = s.observeOOM(ctx, c.rec)
	if e.st, err = c.agent.Exec(ctx, req); err != nil {
		err = c.end(err)
		s.observe.exec(c.rec.Driver, start, err)
		return nil, err
	}
	return s.observe.observedExec(c.rec.Driver, start, &stream[api.ExecEvent]{c: c, next: e.Next, close: e.st.Close, recycle: e.st.Recycle}), nil
}

// Exec runs a command to completion and returns its output, each stream
// bounded by MaxOutputBytes; the rest is read and dropped, and the result
// says it was truncated. Each stream is returned as text when it is valid
// UTF-8 and as base64 when it is not (or always, when the request asks
// for base64), so no byte is lost. In the text mode a truncation that
// would split a UTF-8 sequence keeps the bytes before it (at most 3 fewer
// than the bound), so text cut short is still text.
func (s *Service) Exec(ctx context.Context, id string, req api.ExecRequest) (api.ExecResult, error) {
	st, err := s.execStream(ctx, id, req, false)
	if err != nil {
		return api.ExecResult{}, err
	}
	defer st.Close()
	text := req.OutputEncoding != api.EncodingBase64
	out := boundedBuffer{max: s.cfg.MaxOutputBytes, text: text}
	errb := boundedBuffer{max: s.cfg.MaxOutputBytes, text: text}
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
			Recycle(st, ev.Data)
		case api.ExecStderr:
			errb.write(ev.Data)
			Recycle(st, ev.Data)
		case api.ExecExit:
			if ev.Exit == nil {
				return api.ExecResult{}, errdefs.Unavailable("agent_lost", "the sandbox agent sent an empty exit event")
			}
			res := *ev.Exit
			res.Stdout, res.StdoutEncoding = encodeOutput(out.buf, text)
			res.Stderr, res.StderrEncoding = encodeOutput(errb.buf, text)
			res.StdoutTruncated, res.StderrTruncated = out.truncated, errb.truncated
			return res, nil
		}
	}
}

// encodeOutput is b as the text itself when text is allowed and b is
// valid UTF-8, and as standard base64 otherwise, with the encoding to
// name in the result ("" for text).
func encodeOutput(b []byte, text bool) (s, encoding string) {
	if text && utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), api.EncodingBase64
}

// boundedBuffer keeps the first max bytes written to it. With text set,
// the cut moves back to the start of a UTF-8 sequence it would split.
type boundedBuffer struct {
	buf       []byte
	max       int
	text      bool
	truncated bool
}

func (b *boundedBuffer) write(p []byte) {
	if b.truncated {
		return
	}
	room := max(b.max-len(b.buf), 0)
	if len(p) <= room {
		b.buf = append(b.buf, p...)
		return
	}
	b.buf = append(b.buf, p[:room]...)
	b.truncated = true
	if b.text {
		b.buf = trimPartialRune(b.buf)
	}
}

// trimPartialRune drops the bytes at the end of b that begin a UTF-8
// sequence without its end (at most 3); b is returned as it is when it
// ends with a whole character or with bytes that are not UTF-8 anyway.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
