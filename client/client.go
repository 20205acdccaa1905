// Package client is the Go SDK for hutch's /v1 API: sandboxes, exec (whole
// or streamed), files and tar archives, API keys and tenants.
//
// It speaks the JSON wire types of package api and nothing else, so it
// can be vendored by any Go program:
//
//	c := client.New("http://127.0.0.1:7070", os.Getenv("HUTCH_API_KEY"))
//	sb, err := c.CreateSandbox(ctx, api.CreateSandboxRequest{Template: "host"})
//	if err != nil {
//		return err
//	}
//	defer c.DeleteSandbox(context.WithoutCancel(ctx), sb.ID)
//	res, err := c.Exec(ctx, sb.ID, api.ExecRequest{Cmd: []string{"uname", "-a"}})
//
// Every method takes a context first; cancelling it aborts the request,
// including a stream being read. Errors the server answers are *Error
// values carrying the HTTP status and the API's stable error code; see
// IsNotFound and friends.
//
// Streaming methods (ExecStream, ReadFile, DownloadTar, WriteFile,
// UploadTar) never hold a whole body in memory.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// DefaultUserAgent is sent when no WithUserAgent option is given.
const DefaultUserAgent = "hutch-go-client"

// Client talks to one hutch server with one API key. It is safe for
// concurrent use.
type Client struct {
	base      string // scheme://host[/prefix], no trailing slash
	baseErr   error  // set when the base URL did not parse; every call returns it
	key       string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests through hc, for custom
// transports, TLS settings or proxies. Do not set hc.Timeout if you use
// streams: it bounds the whole body, so a long exec stream would be cut;
// bound calls with their contexts instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// New returns a Client for the server at baseURL (such as
// "http://127.0.0.1:7070"; a path prefix is kept) authenticating with
// apiKey as a bearer token. An empty apiKey sends no Authorization header.
// A baseURL that does not parse makes every call fail with that error.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{key: apiKey, http: http.DefaultClient, userAgent: DefaultUserAgent}
	baseURL = strings.TrimRight(baseURL, "/")
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		c.baseErr = fmt.Errorf("client: bad base URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		c.baseErr = fmt.Errorf("client: bad base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	default:
		c.base = baseURL
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// request is one call: method, path under the base URL, query and body.
type request struct {
	method      string
	path        string // escaped, starting with "/"
	query       url.Values
	body        io.Reader
	contentType string
	accept      string
}

// newRequest builds an authenticated *http.Request for r.
func (c *Client) newRequest(ctx context.Context, r request) (*http.Request, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	target := c.base + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, r.body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if _, ok := r.body.(io.Closer); ok {
		// The transport closes a request body that is an io.Closer; the
		// caller's file or pipe is the caller's to close.
		req.Body = io.NopCloser(r.body)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	return req, nil
}

// send performs r and returns the response when its status is 2xx; any
// other status is read into an *Error and the body closed.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

// do performs a JSON call: in, when not nil, is the request body, and the
// answer is decoded into out when out is not nil.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	r := request{method: method, path: path, query: query}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: encode request: %w", err)
		}
		r.body = bytes.NewReader(b)
		r.contentType = "application/json"
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer closeBody(resp.Body)
	return decodeJSON(resp, out)
}

// decodeJSON decodes a JSON answer into out; a nil out ignores the body.
func decodeJSON(resp *http.Response, out any) error {
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: decode answer of %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

// closeBody drains a little of what is left so the connection can be
// reused, then closes.
func closeBody(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	_ = body.Close()
}

// sandboxPath is the path of a sandbox, or of one of its sub-resources
// when parts are given.
func sandboxPath(id string, parts ...string) string {
	p := "/v1/sandboxes/" + url.PathEscape(id)
	for _, s := range parts {
		p += "/" + s
	}
	return p
}
