package agentclient

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// StartProcess starts a background process.
func (c *Client) StartProcess(ctx context.Context, req api.ProcessRequest) (api.Process, error) {
	if req.Root && !c.Has(agentproto.FeatureRoot) {
		return api.Process{}, c.tooOld("running a process as root", agentproto.FeatureRoot)
	}
	var p agentproto.Process
	err := c.doJSON(ctx, http.MethodPost, "/processes", nil, wireProcessRequest(req), &p)
	return apiProcess(p), err
}

// ListProcesses lists running and recently exited processes.
func (c *Client) ListProcesses(ctx context.Context) (api.ProcessList, error) {
	var l agentproto.ProcessList
	err := c.doJSON(ctx, http.MethodGet, "/processes", nil, nil, &l)
	return apiProcessList(l), err
}

// GetProcess returns one process.
func (c *Client) GetProcess(ctx context.Context, pid int) (api.Process, error) {
	var p agentproto.Process
	err := c.doJSON(ctx, http.MethodGet, processPath(pid, ""), nil, nil, &p)
	return apiProcess(p), err
}

// WriteStdin sends body to the process's stdin, and closes it after when
// closeAfter is set.
func (c *Client) WriteStdin(ctx context.Context, pid int, body io.Reader, closeAfter bool) (api.Process, error) {
	var p agentproto.Process
	q := url.Values{}
	if closeAfter {
		q.Set("close", "true")
	}
	err := c.doJSON(ctx, http.MethodPost, processPath(pid, "/stdin"), q, rawBody{body}, &p)
	return apiProcess(p), err
}

// SignalProcess sends a signal to the process or its group.
func (c *Client) SignalProcess(ctx context.Context, pid int, req api.SignalRequest) (api.Process, error) {
	var p agentproto.Process
	err := c.doJSON(ctx, http.MethodPost, processPath(pid, "/signal"), nil, agentproto.SignalRequest{Signal: req.Signal, Group: req.Group}, &p)
	return apiProcess(p), err
}

// ResizeProcess changes the size of the process's terminal.
func (c *Client) ResizeProcess(ctx context.Context, pid int, size api.TermSize) (api.Process, error) {
	var p agentproto.Process
	err := c.doJSON(ctx, http.MethodPost, processPath(pid, "/resize"), nil, agentproto.TermSize{Rows: size.Rows, Cols: size.Cols}, &p)
	return apiProcess(p), err
}

// WaitProcess waits up to timeout for the process to end and returns it
// as it then is.
func (c *Client) WaitProcess(ctx context.Context, pid int, timeout time.Duration) (api.Process, error) {
	var p agentproto.Process
	q := url.Values{"timeout_ms": {strconv.FormatInt(timeout.Milliseconds(), 10)}}
	err := c.doJSON(ctx, http.MethodGet, processPath(pid, "/wait"), q, nil, &p)
	return apiProcess(p), err
}

// OutputStream is a process's output from a cursor on.
type OutputStream struct {
	body io.ReadCloser
	ev   events
	err  error
}

// ProcessOutput streams the output from cursor on; with follow it goes on
// until the process's output ends, with an "exit" event.
func (c *Client) ProcessOutput(ctx context.Context, pid int, cursor int64, follow bool) (*OutputStream, error) {
	q := url.Values{"cursor": {strconv.FormatInt(cursor, 10)}}
	if follow {
		q.Set("follow", "true")
	}
	resp, err := c.do(ctx, http.MethodGet, processPath(pid, "/output"), q, nil, agentproto.MediaFrames)
	if err != nil {
		return nil, err
	}
	return &OutputStream{body: resp.Body, ev: newEvents(resp)}, nil
}

// Next returns the next event; io.EOF after the last one (the exit event,
// or the end of what there was without follow).
func (s *OutputStream) Next() (api.OutputEvent, error) {
	if s.err != nil {
		return api.OutputEvent{}, s.err
	}
	ev, err := s.ev.output()
	if err != nil {
		if err != io.EOF {
			err = errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the process's output stream broke")
		}
		s.err = err
		return api.OutputEvent{}, err
	}
	return apiOutputEvent(ev), nil
}

// Close ends the stream; the process goes on.
func (s *OutputStream) Close() error { return s.body.Close() }

// Recycle hands back an event's Data, as ExecStream.Recycle does.
func (s *OutputStream) Recycle(b []byte) { s.ev.recycle(b) }

func processPath(pid int, rest string) string {
	return "/processes/" + strconv.Itoa(pid) + rest
}
