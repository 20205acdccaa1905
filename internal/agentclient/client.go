// Package agentclient is the control plane's client for hutch-agent: HTTP
// over the agent's socket (Unix, or TCP for drivers that need it), every
// request signed with the sandbox's token and every answer checked for the
// agent's proof before its body is read, so the token never crosses the
// socket and an impostor on the socket is refused. Error answers come back
// as errdefs errors with their class, code and message intact.
package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/errdefs"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Health is the agent's answer to a health check.
type Health = agentproto.Health

// Client talks to one sandbox's agent. It is safe for concurrent use; its
// connections are kept alive and pooled.
type Client struct {
	token string
	tr    *http.Transport
	hc    *http.Client
}

// New returns a client of the agent listening at address on network
// ("unix" for a socket path, "tcp" for host:port). It connects lazily.
func New(network, address, token string) *Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if network != "unix" {
				return dialer.DialContext(ctx, network, address)
			}
			p, done, err := agentproto.SocketPath(address)
			if err != nil {
				return nil, err
			}
			defer done()
			return dialer.DialContext(ctx, network, p)
		},
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // exec answers its header at once; files may take a while
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
	return &Client{token: token, tr: tr, hc: &http.Client{Transport: tr}}
}

// Close drops the client's idle connections.
func (c *Client) Close() {
	c.tr.CloseIdleConnections()
}

// Health asks the agent whether it serves.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.doJSON(ctx, http.MethodGet, "/health", nil, nil, &h)
	return h, err
}

// Shutdown asks the agent to kill its process tree and exit.
func (c *Client) Shutdown(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodPost, "/shutdown", nil, nil, "")
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

// ExecStream is the output of a running command. Next returns its events
// in order, the last of type api.ExecExit, then io.EOF. Close ends the
// stream early; the agent then kills the command's process group.
type ExecStream struct {
	body io.ReadCloser
	dec  *json.Decoder
	err  error // io.EOF after the exit event, or what broke the stream
}

// Exec starts req and returns its stream once the agent has answered.
// A program that cannot be started is not an error here: its exit event
// says 127 or 126.
func (c *Client) Exec(ctx context.Context, req api.ExecRequest) (*ExecStream, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, "/exec", nil, bytes.NewReader(b), "application/json")
	if err != nil {
		return nil, err
	}
	return &ExecStream{body: resp.Body, dec: json.NewDecoder(resp.Body)}, nil
}

// Next returns the next event; after the exit event, io.EOF; if the stream
// broke before it (the agent died, the stream was closed), an error of
// class errdefs.ErrUnavailable, again on every later call.
func (s *ExecStream) Next() (api.ExecEvent, error) {
	if s.err != nil {
		return api.ExecEvent{}, s.err
	}
	var ev api.ExecEvent
	if err := s.dec.Decode(&ev); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the command's output stream ended before its exit status")
		return api.ExecEvent{}, s.err
	}
	if ev.Type == api.ExecExit {
		if ev.Exit == nil {
			s.err = errdefs.New(errdefs.ErrUnavailable, "agent_stream_broken", "the agent sent an exit event without a status")
			return api.ExecEvent{}, s.err
		}
		s.err = io.EOF
	}
	return ev, nil
}

// Close ends the stream; if the command still runs, the agent kills its
// process group.
func (s *ExecStream) Close() error {
	if s.err == nil {
		s.err = errdefs.New(errdefs.ErrUnavailable, "agent_stream_broken", "the stream is closed")
	}
	return s.body.Close()
}

// ReadFile returns the content of a regular file; the caller closes it.
func (c *Client) ReadFile(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := c.do(ctx, http.MethodGet, "/files", url.Values{"path": {path}}, nil, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// WriteFile replaces path atomically with body; mode is octal such as
// "0644", empty for the default; parents makes missing directories above
// path.
func (c *Client) WriteFile(ctx context.Context, path, mode string, parents bool, body io.Reader) (api.FileInfo, error) {
	q := url.Values{"path": {path}}
	if parents {
		q.Set("parents", "true")
	}
	if mode != "" {
		q.Set("mode", mode)
	}
	var fi api.FileInfo
	err := c.doJSON(ctx, http.MethodPut, "/files", q, rawBody{body}, &fi)
	return fi, err
}

// Remove removes path; a non-empty directory needs recursive.
func (c *Client) Remove(ctx context.Context, path string, recursive bool) error {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	resp, err := c.do(ctx, http.MethodDelete, "/files", q, nil, "")
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

// List returns the entries of a directory.
func (c *Client) List(ctx context.Context, path string) (api.FileList, error) {
	var l api.FileList
	err := c.doJSON(ctx, http.MethodGet, "/files/list", url.Values{"path": {path}}, nil, &l)
	return l, err
}

// Stat describes path without following a final symlink.
func (c *Client) Stat(ctx context.Context, path string) (api.FileInfo, error) {
	var fi api.FileInfo
	err := c.doJSON(ctx, http.MethodGet, "/files/stat", url.Values{"path": {path}}, nil, &fi)
	return fi, err
}

// Mkdir creates a directory and its parents.
func (c *Client) Mkdir(ctx context.Context, req api.MkdirRequest) (api.FileInfo, error) {
	var fi api.FileInfo
	err := c.doJSON(ctx, http.MethodPost, "/files/mkdir", nil, req, &fi)
	return fi, err
}

// Move renames a path; it refuses to replace one unless req.Overwrite.
func (c *Client) Move(ctx context.Context, req api.MoveRequest) (api.FileInfo, error) {
	var fi api.FileInfo
	err := c.doJSON(ctx, http.MethodPost, "/files/move", nil, req, &fi)
	return fi, err
}

// TarDownload returns a tar of a directory; the caller closes it.
func (c *Client) TarDownload(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := c.do(ctx, http.MethodGet, "/files/tar", url.Values{"path": {path}}, nil, "")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// TarUpload extracts the tar body under the directory path.
func (c *Client) TarUpload(ctx context.Context, path string, body io.Reader) (api.TarResult, error) {
	var res api.TarResult
	err := c.doJSON(ctx, http.MethodPut, "/files/tar", url.Values{"path": {path}}, rawBody{body}, &res)
	return res, err
}

// rawBody marks a request body sent as is rather than as JSON.
type rawBody struct{ r io.Reader }

// doJSON sends in (nil, a rawBody, or a value to encode as JSON) and
// decodes the answer into out.
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	ctype := ""
	switch v := in.(type) {
	case nil:
	case rawBody:
		body, ctype = v.r, "application/octet-stream"
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	resp, err := c.do(ctx, method, path, q, body, ctype)
	if err != nil {
		return err
	}
	defer drain(resp)
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, "agent_bad_answer", err, "the agent's answer to %s %s is not valid JSON", method, path)
	}
	return nil
}

// do signs and sends one request, verifies the agent's proof and turns an
// error answer into an errdefs error. On success the caller owns the body.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, ctype string) (*http.Response, error) {
	u := "http://agent" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	nonce := agentproto.NewNonce()
	req.Header.Set(agentproto.HeaderNonce, nonce)
	req.Header.Set(agentproto.HeaderAuth, agentproto.RequestMAC(c.token, nonce, method, req.URL.Path))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errdefs.Wrap(errdefs.ErrUnavailable, "agent_unreachable", err, "the sandbox's agent is unreachable")
	}
	if !agentproto.Equal(resp.Header.Get(agentproto.HeaderProof), agentproto.Proof(c.token, nonce)) {
		resp.Body.Close()
		return nil, errdefs.New(errdefs.ErrUnavailable, "agent_unverified", "the peer on the agent's socket did not prove it is this sandbox's agent")
	}
	if resp.StatusCode >= 300 {
		defer drain(resp)
		return nil, answerError(resp)
	}
	return resp, nil
}

// answerError rebuilds the error an agent answered.
func answerError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var e api.Error
	if json.Unmarshal(b, &e) != nil || e.Error.Code == "" {
		e.Error.Code = "agent_error"
		e.Error.Message = "the agent answered " + strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	return errdefs.FromHTTP(resp.StatusCode, e.Error.Code, e.Error.Message)
}

// drain reads a little of what is left so the connection can be reused,
// then closes the body.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}
