// Package agentclient is the control plane's client for hutch-agent: HTTP
// over the agent's socket (Unix, or TCP for drivers that need it), every
// request signed with the sandbox's token and every answer checked for the
// agent's proof before its body is read, so the token never crosses the
// socket and an impostor on the socket is refused. Error answers come back
// as errdefs errors with their class, code and message intact.
//
// It speaks the protocol the agent reported (agentproto.Info): with an
// agent of protocol 2, one HTTP/2 connection (prior knowledge, no TLS on a
// Unix socket) carries every call and stream, requests are signed over
// method, path, query and body, and output comes as binary frames; with an
// agent of protocol 1 (an old template's), HTTP/1.1, the old signature and
// NDJSON. Calls that need a feature the agent lacks say so (Has, and
// errdefs code agent_too_old). The wire types are agentproto's; what the
// rest of the control plane sees are api's, converted here (convert.go).
package agentclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Health is the agent's answer to a health check.
type Health = agentproto.Health

// Client talks to one sandbox's agent. It is safe for concurrent use.
type Client struct {
	token string
	info  agentproto.Info
	dial  func(ctx context.Context) (net.Conn, error)
	tr    *http.Transport
	hc    *http.Client
}

// Option adjusts a client.
type Option func(*Client)

// Speaking makes the client speak to an agent that reported info; without
// it, the client assumes an agent of this build (agentproto.Current). A
// zero Info is an agent of protocol 1, which reports none.
func Speaking(info agentproto.Info) Option {
	return func(c *Client) { c.info = info }
}

// New returns a client of the agent listening at address on network
// ("unix" for a socket path, "tcp" for host:port). It connects lazily.
func New(network, address, token string, opts ...Option) *Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	c := &Client{token: token, info: agentproto.Current()}
	for _, o := range opts {
		o(c)
	}
	c.dial = func(ctx context.Context) (net.Conn, error) {
		if network != "unix" {
			return dialer.DialContext(ctx, network, address)
		}
		p, done, err := agentproto.SocketPath(address)
		if err != nil {
			return nil, err
		}
		defer done()
		return dialer.DialContext(ctx, network, p)
	}
	c.tr = &http.Transport{
		DialContext:           func(ctx context.Context, _, _ string) (net.Conn, error) { return c.dial(ctx) },
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // exec answers its header at once; files may take a while
		DisableCompression:    true,
	}
	if c.info.Has(agentproto.FeatureH2) {
		// One connection for every call: HTTP/2 with prior knowledge.
		// Streams beyond the agent's limit wait rather than open a second
		// connection.
		c.tr.Protocols = new(http.Protocols)
		c.tr.Protocols.SetUnencryptedHTTP2(true)
		c.tr.HTTP2 = &http.HTTP2Config{
			StrictMaxConcurrentRequests:   true,
			MaxReceiveBufferPerStream:     4 << 20,
			MaxReceiveBufferPerConnection: 64 << 20,
			// Output goes in DATA frames of up to a chunk (256 KiB), not
			// HTTP/2's default 16 KiB.
			MaxReadFrameSize: 1 << 20,
			// A connection quiet for SendPingTimeout is pinged, and dropped
			// when the ping is not answered within PingTimeout: a call to a
			// hung agent fails within their sum (the HTTP/2 server answers
			// pings however busy its handlers are). Every ping wakes an
			// idle agent (its scheduler's monitor thread with it) and the
			// control plane pings every agent: at 10 s, 190 pings a second
			// at 1,900 idle sandboxes took 18 % of a 2-core host.
			SendPingTimeout: time.Minute,
			PingTimeout:     5 * time.Second,
		}
	}
	c.hc = &http.Client{Transport: c.tr}
	return c
}

// Info is what the agent reported: its protocol and features.
func (c *Client) Info() agentproto.Info { return c.info }

// Has reports whether the agent has feature f (agentproto.Feature…).
func (c *Client) Has(f string) bool { return c.info.Has(f) }

// Call is one JSON call of the agent protocol as the typed methods make
// it: signed, its answer checked, in sent and the answer decoded into out
// (each nil for none). It is for what speaks the protocol itself, the
// agent's own tests; the control plane calls the typed methods, which
// convert the protocol's types into its own.
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	return c.doJSON(ctx, method, path, query, in, out)
}

// HasEvents says whether the agent pushes its processes' exits on an
// event feed (Events), so that no request need wait on each.
func (c *Client) HasEvents() bool { return c.Has(agentproto.FeatureEvents) }

// tooOld is the error of a call that needs a feature the agent lacks.
func (c *Client) tooOld(what, feature string) error {
	return errdefs.New(errdefs.ErrUnsupported, "agent_too_old",
		"%s needs an agent with %q; this sandbox's agent speaks protocol %d (recreate the sandbox from a newer template)", what, feature, c.info.Version())
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
	ev   events
	err  error // io.EOF after the exit event, or what broke the stream
}

// Exec starts req and returns its stream once the agent has answered.
// A program that cannot be started is not an error here: its exit event
// says 127 or 126.
func (c *Client) Exec(ctx context.Context, req api.ExecRequest) (*ExecStream, error) {
	if req.Root && !c.Has(agentproto.FeatureRoot) {
		return nil, c.tooOld("running a command as root", agentproto.FeatureRoot)
	}
	resp, err := c.do(ctx, http.MethodPost, "/exec", nil, jsonBody{wireExec(req)}, agentproto.MediaFrames)
	if err != nil {
		return nil, err
	}
	return &ExecStream{body: resp.Body, ev: newEvents(resp)}, nil
}

// Next returns the next event; after the exit event, io.EOF; if the stream
// broke before it (the agent died, the stream was closed), an error of
// class errdefs.ErrUnavailable, again on every later call.
func (s *ExecStream) Next() (api.ExecEvent, error) {
	if s.err != nil {
		return api.ExecEvent{}, s.err
	}
	ev, err := s.ev.exec()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the command's output stream ended before its exit status")
		return api.ExecEvent{}, s.err
	}
	if ev.Type == agentproto.Exit {
		if ev.Exit == nil {
			s.err = errdefs.New(errdefs.ErrUnavailable, "agent_stream_broken", "the agent sent an exit event without a status")
			return api.ExecEvent{}, s.err
		}
		s.err = io.EOF
	}
	return apiExecEvent(ev), nil
}

// Collect reads the stream to its exit and returns the result with the
// whole of stdout and stderr: for a caller of its own that runs a short
// command (the API's exec buffers through the sandbox service instead,
// under its output bound).
func (s *ExecStream) Collect() (api.ExecResult, error) {
	var out, errb strings.Builder
	for {
		ev, err := s.Next()
		if err != nil {
			return api.ExecResult{}, err
		}
		switch ev.Type {
		case api.ExecStdout:
			out.Write(ev.Data)
		case api.ExecStderr:
			errb.Write(ev.Data)
		case api.ExecExit:
			res := *ev.Exit
			res.Stdout, res.Stderr = out.String(), errb.String()
			return res, nil
		}
	}
}

// Recycle hands back the Data of an event this stream returned, once the
// caller is done with it (written out, copied), so a later event may be
// read into it; the caller must not touch b afterwards. Buffers stay with
// their stream. Safe beside Next.
func (s *ExecStream) Recycle(b []byte) { s.ev.recycle(b) }

// Close ends the stream; if the command still runs, the agent kills its
// process group.
func (s *ExecStream) Close() error {
	if s.err == nil {
		s.err = errdefs.New(errdefs.ErrUnavailable, "agent_stream_broken", "the stream is closed")
	}
	return s.body.Close()
}

// rawBody marks a request body sent as it is, framed with its MAC at its
// end (agentproto.FrameBody) for an agent of protocol 2; jsonBody, a value
// sent as JSON, signed by its hash.
type (
	rawBody  struct{ r io.Reader }
	jsonBody struct{ v any }
)

// doJSON sends in (nil, a rawBody, or a value to encode as JSON) and
// decodes the answer into out.
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	if in != nil {
		if _, ok := in.(rawBody); !ok {
			in = jsonBody{in}
		}
	}
	resp, err := c.do(ctx, method, path, q, in, "")
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
// in is nil, a rawBody or a jsonBody; accept, when set, is
// the request's Accept.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in any, accept string) (*http.Response, error) {
	req, nonce, err := c.newRequest(ctx, method, path, q, in)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var classified *errdefs.Error
		if errors.As(err, &classified) {
			return nil, classified
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

// newRequest builds a signed request and returns it with its nonce.
func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, in any) (*http.Request, string, error) {
	u := "http://agent" + path
	rawQuery := q.Encode()
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	v2 := c.info.Version() >= 2
	// The nonce first: a framed body is signed with it.
	nonce := agentproto.NewNonce()
	var body io.Reader
	ctype, sum := "", agentproto.EmptyBody
	switch v := in.(type) {
	case nil:
	case jsonBody:
		b, err := json.Marshal(v.v)
		if err != nil {
			return nil, "", err
		}
		h := sha256.Sum256(b)
		body, ctype, sum = bytes.NewReader(b), "application/json", hex.EncodeToString(h[:])
	case rawBody:
		if v.r == nil {
			v.r = bytes.NewReader(nil)
		}
		body, ctype, sum = v.r, "application/octet-stream", agentproto.BodyFramed
		if v2 {
			body = agentproto.FrameBody(v.r, c.token, nonce)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set(agentproto.HeaderNonce, nonce)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if !v2 {
		req.Header.Set(agentproto.HeaderAuth, agentproto.RequestMACv1(c.token, nonce, method, path))
		return req, nonce, nil
	}
	req.Header.Set(agentproto.HeaderBody, sum)
	req.Header.Set(agentproto.HeaderAuth, agentproto.RequestMAC(c.token, nonce, method, path, rawQuery, sum))
	return req, nonce, nil
}

// answerError rebuilds the error an agent answered.
func answerError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var e agentproto.Error
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
