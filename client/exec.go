package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/hutchdev/hutch/api"
)

// MaxEventSize bounds one line of an exec stream. The server sends output
// in small chunks; a longer line is an error rather than unbounded memory.
const MaxEventSize = 16 << 20

// Exec runs a command in a sandbox to completion and returns its exit code
// and output (bounded by the server; see the *Truncated fields). A program
// that could not start is not an error here: it is ExitCode 127 or 126
// with ExecResult.Error set.
//
// The result is decoded: Stdout and Stderr hold exactly the bytes the
// command wrote, whether or not they are UTF-8 (the server sends what is
// not as base64), and the encodings are empty.
func (c *Client) Exec(ctx context.Context, id string, req api.ExecRequest) (*api.ExecResult, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.ExecResult
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "exec"), nil, req, &out); err != nil {
		return nil, err
	}
	if err := out.Decode(); err != nil {
		return nil, fmt.Errorf("client: exec result: %w", err)
	}
	return &out, nil
}

// ExecStream runs a command in a sandbox and streams its output as it is
// produced. Read events with Next until it returns io.EOF, then Close; or
// let Copy do both. Cancelling ctx ends the stream.
func (c *Client) ExecStream(ctx context.Context, id string, req api.ExecRequest) (*ExecStream, error) {
	if id == "" {
		return nil, errNoID
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: encode request: %w", err)
	}
	resp, err := c.send(ctx, request{
		method:      http.MethodPost,
		path:        sandboxPath(id, "exec", "stream"),
		body:        bytes.NewReader(b),
		contentType: "application/json",
		// Binary frames when the server has them; NDJSON from one that
		// does not.
		accept: api.MediaExecFrames + ", application/x-ndjson",
	})
	if err != nil {
		return nil, err
	}
	if resp.Header.Get("Content-Type") == api.MediaExecFrames {
		return &ExecStream{body: resp.Body, frames: bufio.NewReaderSize(resp.Body, 64<<10)}, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), MaxEventSize)
	return &ExecStream{body: resp.Body, sc: sc}, nil
}

// ExecStream is a running command's output: a sequence of api.ExecEvent
// values, "stdout" and "stderr" chunks in the order the server saw them
// and a final "exit" event carrying the api.ExecResult. It is read by one
// goroutine; Close may be called from any.
type ExecStream struct {
	body   io.ReadCloser
	sc     *bufio.Scanner // NDJSON
	frames *bufio.Reader  // or binary frames
	spare  []byte         // a payload handed back by Recycle
	exit   *api.ExecResult
	err    error // sticky: returned by every Next after the first failure

	closeOnce sync.Once
	closeErr  error
}

// Next returns the next event, waiting for the server to send it. After
// the exit event it returns io.EOF. A stream that ends before the exit
// event returns an error wrapping io.ErrUnexpectedEOF; a cancelled context
// returns the context's error. Events of types this client does not know
// are returned as they are.
func (s *ExecStream) Next() (api.ExecEvent, error) {
	if s.err != nil {
		return api.ExecEvent{}, s.err
	}
	ev, err := s.next()
	if err != nil {
		s.err = err
	}
	return ev, err
}

func (s *ExecStream) next() (api.ExecEvent, error) {
	if s.exit != nil {
		return api.ExecEvent{}, io.EOF
	}
	if s.frames != nil {
		return s.nextFrame()
	}
	for s.sc.Scan() {
		line := bytes.TrimSpace(s.sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, ok := fastExecEvent(line)
		if !ok {
			if err := json.Unmarshal(line, &ev); err != nil {
				return api.ExecEvent{}, fmt.Errorf("client: exec stream: bad event: %w", err)
			}
		}
		if ev.Type == api.ExecExit {
			if ev.Exit == nil {
				return api.ExecEvent{}, errors.New("client: exec stream: exit event without a result")
			}
			s.exit = ev.Exit
		}
		return ev, nil
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return api.ExecEvent{}, fmt.Errorf("client: exec stream: event longer than %d bytes", MaxEventSize)
		}
		return api.ExecEvent{}, fmt.Errorf("client: exec stream: %w", err)
	}
	return api.ExecEvent{}, fmt.Errorf("client: exec stream ended before the exit event: %w", io.ErrUnexpectedEOF)
}

// fastExecEvent decodes an output event in the one form the server writes
// it, {"type":"stdout","data":"<base64>"}, without the JSON decoder's
// passes over the data; false for any other line, which json.Unmarshal
// then decodes.
func fastExecEvent(line []byte) (api.ExecEvent, bool) {
	for _, typ := range [...]string{api.ExecStdout, api.ExecStderr} {
		rest, ok := bytes.CutPrefix(line, []byte(`{"type":"`+typ+`","data":"`))
		if !ok {
			continue
		}
		data, ok := bytes.CutSuffix(rest, []byte(`"}`))
		if !ok || bytes.IndexByte(data, '\r') >= 0 { // the decoder would skip it; JSON does not allow it
			return api.ExecEvent{}, false
		}
		b, err := base64.StdEncoding.AppendDecode(nil, data)
		if err != nil {
			return api.ExecEvent{}, false
		}
		return api.ExecEvent{Type: typ, Data: b}, true
	}
	return api.ExecEvent{}, false
}

// Result returns the exit event's result once Next has returned it, and
// nil before.
func (s *ExecStream) Result() *api.ExecResult { return s.exit }

// Close ends the stream; if the command is still running the server sees
// the client go away. It is safe to call more than once.
func (s *ExecStream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}

// Recycle hands back the Data of an event Next returned, once the caller
// is done with it, so a later event of a binary stream may be read into
// it instead of a fresh allocation: at output rates of hundreds of MiB/s
// that is most of a reader's cost. The caller must not touch b afterwards.
// Without it every event's Data is the caller's to keep.
func (s *ExecStream) Recycle(b []byte) {
	if cap(b) > cap(s.spare) {
		s.spare = b
	}
}

// Copy writes every stdout and stderr chunk to stdout and stderr as it
// arrives (a nil writer discards), then closes the stream and returns the
// exit result. Events of other types are skipped.
func (s *ExecStream) Copy(stdout, stderr io.Writer) (*api.ExecResult, error) {
	defer s.Close()
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return s.exit, nil
		}
		if err != nil {
			return nil, err
		}
		var w io.Writer
		switch ev.Type {
		case api.ExecStdout:
			w = stdout
		case api.ExecStderr:
			w = stderr
		}
		if w == nil || len(ev.Data) == 0 {
			continue
		}
		if _, err := w.Write(ev.Data); err != nil {
			return nil, fmt.Errorf("client: write %s: %w", ev.Type, err)
		}
		s.Recycle(ev.Data) // a Writer does not keep what it was given
	}
}

// nextFrame reads the next event of a stream of binary frames.
func (s *ExecStream) nextFrame() (api.ExecEvent, error) {
	kind, b, err := api.ReadExecFrameInto(s.frames, s.spare)
	s.spare = nil // read into, and the caller's until handed back; or too small
	switch {
	case err == io.EOF:
		return api.ExecEvent{}, fmt.Errorf("client: exec stream ended before the exit event: %w", io.ErrUnexpectedEOF)
	case err != nil:
		return api.ExecEvent{}, fmt.Errorf("client: exec stream: %w", err)
	case kind == api.FrameStdout:
		return api.ExecEvent{Type: api.ExecStdout, Data: b}, nil
	case kind == api.FrameStderr:
		return api.ExecEvent{Type: api.ExecStderr, Data: b}, nil
	}
	var res api.ExecResult
	if err := json.Unmarshal(b, &res); err != nil {
		return api.ExecEvent{}, fmt.Errorf("client: exec stream: bad exit frame: %w", err)
	}
	s.exit = &res
	return api.ExecEvent{Type: api.ExecExit, Exit: &res}, nil
}
