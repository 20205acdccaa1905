package agentclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// StdinStream is a process's input as one open request
// (agentproto.FeatureStdinStream): what is written goes to the process as
// it comes. Close ends the request, not the input: the process's stdin
// stays open.
type StdinStream struct {
	w    *io.PipeWriter
	resp *http.Response
}

// StdinStream opens a stream to process pid's input; it returns once the
// agent has accepted it. An agent without the feature is an error of code
// agent_too_old.
func (c *Client) StdinStream(ctx context.Context, pid int) (*StdinStream, error) {
	if !c.Has(agentproto.FeatureStdinStream) {
		return nil, c.tooOld("a stream of input", agentproto.FeatureStdinStream)
	}
	pr, pw := io.Pipe()
	resp, err := c.do(ctx, http.MethodPost, processPath(pid, "/stdin"), url.Values{"stream": {"true"}}, rawBody{pr}, "")
	if err != nil {
		pw.Close()
		return nil, err
	}
	return &StdinStream{w: pw, resp: resp}, nil
}

// Write sends p to the process; it returns once the transport took it.
func (s *StdinStream) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		err = errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the process's input stream broke")
	}
	return n, err
}

// Close ends the stream and returns the process as the agent last saw
// it, or what ended the stream on the agent's side. When ctx ends first
// (the process does not read what was sent), the request is dropped.
func (s *StdinStream) Close(ctx context.Context) (api.Process, error) {
	s.w.Close()
	defer s.resp.Body.Close()
	stop := context.AfterFunc(ctx, func() { s.resp.Body.Close() })
	defer stop()
	var end struct {
		agentproto.Process
		Error *agentproto.ErrorBody `json:"error"`
	}
	if err := json.NewDecoder(s.resp.Body).Decode(&end); err != nil {
		return api.Process{}, errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the process's input stream ended without an answer")
	}
	if end.Error != nil {
		return api.Process{}, errdefs.FromHTTP(http.StatusConflict, end.Error.Code, end.Error.Message)
	}
	return apiProcess(end.Process), nil
}
