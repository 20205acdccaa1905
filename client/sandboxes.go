package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/hutchdev/hutch/api"
)

// CreateSandbox creates a sandbox and returns it as the server reports it
// at the end of the call. Every field of req is optional.
func (c *Client) CreateSandbox(ctx context.Context, req api.CreateSandboxRequest) (*api.Sandbox, error) {
	var out api.Sandbox
	if err := c.do(ctx, http.MethodPost, "/v1/sandboxes", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSandbox returns one sandbox. An unknown id is an *Error with code
// sandbox_not_found (IsNotFound).
func (c *Client) GetSandbox(ctx context.Context, id string) (*api.Sandbox, error) {
	return c.sandboxCall(ctx, http.MethodGet, id)
}

// DeleteSandbox destroys a sandbox and everything in it.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	if id == "" {
		return errNoID
	}
	return c.do(ctx, http.MethodDelete, sandboxPath(id), nil, nil, nil)
}

// StopSandbox stops a running sandbox, keeping its files, and returns it.
func (c *Client) StopSandbox(ctx context.Context, id string) (*api.Sandbox, error) {
	return c.sandboxCall(ctx, http.MethodPost, id, "stop")
}

// PauseSandbox freezes a running sandbox's processes, its memory kept,
// and returns it.
func (c *Client) PauseSandbox(ctx context.Context, id string) (*api.Sandbox, error) {
	return c.sandboxCall(ctx, http.MethodPost, id, "pause")
}

// ResumeSandbox thaws a paused sandbox and returns it.
func (c *Client) ResumeSandbox(ctx context.Context, id string) (*api.Sandbox, error) {
	return c.sandboxCall(ctx, http.MethodPost, id, "resume")
}

// Keepalive keeps idle actions off the sandbox for the next forS seconds
// (0 ends a keepalive) and returns it.
func (c *Client) Keepalive(ctx context.Context, id string, forS int) (*api.Sandbox, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.Sandbox
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "keepalive"), nil, api.KeepaliveRequest{ForS: forS}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StartSandbox starts a stopped sandbox again and returns it.
func (c *Client) StartSandbox(ctx context.Context, id string) (*api.Sandbox, error) {
	return c.sandboxCall(ctx, http.MethodPost, id, "start")
}

// sandboxCall is a body-less call on a sandbox that answers the sandbox.
func (c *Client) sandboxCall(ctx context.Context, method, id string, parts ...string) (*api.Sandbox, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.Sandbox
	if err := c.do(ctx, method, sandboxPath(id, parts...), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListOptions filter and page GET /v1/sandboxes. The zero value lists the
// first page of every sandbox with the server's default page size.
type ListOptions struct {
	// State keeps only sandboxes in this state ("running", "stopped", …).
	State api.SandboxState
	// Labels keeps only sandboxes carrying every one of these labels.
	Labels map[string]string
	// Limit is the page size; zero is the server's default.
	Limit int
	// Cursor continues a listing from a previous page's NextCursor.
	Cursor string
}

// query encodes o as the listing's query string. Labels are sent as
// repeated label=k=v parameters in key order.
func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.State != "" {
		q.Set("state", string(o.State))
	}
	keys := make([]string, 0, len(o.Labels))
	for k := range o.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		q.Add("label", k+"="+o.Labels[k])
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// ListSandboxes returns one page of the tenant's sandboxes. Pass the
// answer's NextCursor as opts.Cursor for the next page; an empty
// NextCursor means this was the last. AllSandboxes walks every page.
func (c *Client) ListSandboxes(ctx context.Context, opts ListOptions) (*api.SandboxList, error) {
	var out api.SandboxList
	if err := c.do(ctx, http.MethodGet, "/v1/sandboxes", opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllSandboxes returns an iterator over every sandbox matching opts,
// fetching page after page (opts.Limit is the page size, opts.Cursor the
// starting point). It stops at the first error, which it yields with a
// zero Sandbox:
//
//	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{State: api.StateRunning}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(sb.ID)
//	}
func (c *Client) AllSandboxes(ctx context.Context, opts ListOptions) iter.Seq2[api.Sandbox, error] {
	return func(yield func(api.Sandbox, error) bool) {
		seen := map[string]bool{}
		for {
			page, err := c.ListSandboxes(ctx, opts)
			if err != nil {
				yield(api.Sandbox{}, err)
				return
			}
			for _, sb := range page.Sandboxes {
				if !yield(sb, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			if seen[page.NextCursor] {
				yield(api.Sandbox{}, fmt.Errorf("client: sandbox listing repeats cursor %q", page.NextCursor))
				return
			}
			seen[page.NextCursor] = true
			opts.Cursor = page.NextCursor
		}
	}
}

// SetTimeout gives sandbox id a lifetime of timeoutS seconds: from now
// when it runs, from its next start when it is stopped (a stopped
// sandbox's clock does not run).
func (c *Client) SetTimeout(ctx context.Context, id string, timeoutS int) (*api.Sandbox, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.Sandbox
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "timeout"), nil, api.TimeoutRequest{TimeoutS: timeoutS}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
