package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
)

// StartProcess starts a background process in a sandbox. It runs until it
// exits or is signalled, whoever is connected; read its output with
// ProcessOutput, any number of times, from any cursor.
func (c *Client) StartProcess(ctx context.Context, id string, req api.ProcessRequest) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodPost, sandboxPath(id, "processes"), nil, req, &p)
}

// ListProcesses lists a sandbox's running and recently exited processes.
func (c *Client) ListProcesses(ctx context.Context, id string) (api.ProcessList, error) {
	var l api.ProcessList
	if id == "" {
		return l, errNoID
	}
	return l, c.do(ctx, http.MethodGet, sandboxPath(id, "processes"), nil, nil, &l)
}

// GetProcess returns one process.
func (c *Client) GetProcess(ctx context.Context, id string, pid int) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodGet, processPath(id, pid), nil, nil, &p)
}

// WriteStdin sends r to the process's stdin and closes it afterwards when
// closeAfter is set.
func (c *Client) WriteStdin(ctx context.Context, id string, pid int, r io.Reader, closeAfter bool) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	q := url.Values{}
	if closeAfter {
		q.Set("close", "true")
	}
	resp, err := c.send(ctx, request{method: http.MethodPost, path: processPath(id, pid, "stdin"), query: q,
		body: r, contentType: "application/octet-stream"})
	if err != nil {
		return p, err
	}
	defer closeBody(resp.Body)
	return p, decodeJSON(resp, &p)
}

// SignalProcess sends signal (TERM, KILL, INT, HUP…) to the process, or
// to its whole process group.
func (c *Client) SignalProcess(ctx context.Context, id string, pid int, signal string, group bool) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodPost, processPath(id, pid, "signal"), nil, api.SignalRequest{Signal: signal, Group: group}, &p)
}

// ResizeProcess changes the size of the process's terminal.
func (c *Client) ResizeProcess(ctx context.Context, id string, pid int, size api.TermSize) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	return p, c.do(ctx, http.MethodPost, processPath(id, pid, "resize"), nil, size, &p)
}

// WaitProcess waits up to timeout (at most 10 minutes) for the process to
// exit and returns it as it then is: check Running.
func (c *Client) WaitProcess(ctx context.Context, id string, pid int, timeout time.Duration) (api.Process, error) {
	var p api.Process
	if id == "" {
		return p, errNoID
	}
	q := url.Values{"timeout_ms": {strconv.FormatInt(timeout.Milliseconds(), 10)}}
	return p, c.do(ctx, http.MethodGet, processPath(id, pid, "wait"), q, nil, &p)
}

// OutputStream is a process's output from a cursor on. Cursor tells where
// a new stream would resume after the events read so far.
type OutputStream struct {
	sse    *sseReader
	cursor int64
	err    error
}

// ProcessOutput streams the output of a process from cursor on (stdout and
// stderr counted together, from 0). With follow it goes on until the
// process's output ends, with an "exit" event; a "dropped" event says how
// many bytes were pushed out of the process's buffer before they were
// read. After a broken connection, call it again with Cursor().
func (c *Client) ProcessOutput(ctx context.Context, id string, pid int, cursor int64, follow bool) (*OutputStream, error) {
	if id == "" {
		return nil, errNoID
	}
	q := url.Values{"cursor": {strconv.FormatInt(cursor, 10)}, "follow": {strconv.FormatBool(follow)}}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: processPath(id, pid, "output"), query: q, accept: "text/event-stream"})
	if err != nil {
		return nil, err
	}
	return &OutputStream{sse: newSSEReader(resp.Body), cursor: cursor}, nil
}

// Next returns the next event; io.EOF after the last.
func (s *OutputStream) Next() (api.OutputEvent, error) {
	var ev api.OutputEvent
	if s.err != nil {
		return ev, s.err
	}
	raw, err := s.sse.next()
	if err != nil {
		s.err = err
		return ev, err
	}
	if err := json.Unmarshal([]byte(raw.Data), &ev); err != nil {
		s.err = fmt.Errorf("client: decode output event: %w", err)
		return ev, s.err
	}
	if raw.ID != "" {
		if n, err := strconv.ParseInt(raw.ID, 10, 64); err == nil {
			s.cursor = n
		}
	}
	return ev, nil
}

// Cursor is where the output resumes after what Next returned.
func (s *OutputStream) Cursor() int64 { return s.cursor }

// Close ends the stream; the process goes on.
func (s *OutputStream) Close() error { return s.sse.close() }

// CopyOutput writes a process's output from cursor on to stdout and
// stderr as it arrives and returns the process once it exits. Dropped
// output is reported on stderr.
func (c *Client) CopyOutput(ctx context.Context, id string, pid int, cursor int64, stdout, stderr io.Writer) (api.Process, error) {
	st, err := c.ProcessOutput(ctx, id, pid, cursor, true)
	if err != nil {
		return api.Process{}, err
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return api.Process{}, fmt.Errorf("client: the output of process %d ended without its exit", pid)
		}
		if err != nil {
			return api.Process{}, err
		}
		switch ev.Type {
		case api.OutputStdout:
			_, err = stdout.Write(ev.Data)
		case api.OutputStderr:
			_, err = stderr.Write(ev.Data)
		case api.OutputDropped:
			_, err = fmt.Fprintf(stderr, "[hutch: %d bytes of output were dropped before they were read]\n", ev.Dropped)
		case api.OutputExit:
			return *ev.Process, nil
		}
		if err != nil {
			return api.Process{}, err
		}
	}
}

func processPath(id string, pid int, parts ...string) string {
	return sandboxPath(id, append([]string{"processes", strconv.Itoa(pid)}, parts...)...)
}
