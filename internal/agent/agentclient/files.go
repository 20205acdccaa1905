package agentclient

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
)

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
	var fi agentproto.FileInfo
	err := c.doJSON(ctx, http.MethodPut, "/files", q, rawBody{body}, &fi)
	return api.FileInfo(fi), err
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
	var l agentproto.FileList
	err := c.doJSON(ctx, http.MethodGet, "/files/list", url.Values{"path": {path}}, nil, &l)
	return apiFileList(l), err
}

// Stat describes path without following a final symlink.
func (c *Client) Stat(ctx context.Context, path string) (api.FileInfo, error) {
	var fi agentproto.FileInfo
	err := c.doJSON(ctx, http.MethodGet, "/files/stat", url.Values{"path": {path}}, nil, &fi)
	return api.FileInfo(fi), err
}

// Mkdir creates a directory and its parents.
func (c *Client) Mkdir(ctx context.Context, req api.MkdirRequest) (api.FileInfo, error) {
	var fi agentproto.FileInfo
	err := c.doJSON(ctx, http.MethodPost, "/files/mkdir", nil, agentproto.MkdirRequest{Path: req.Path, Mode: req.Mode}, &fi)
	return api.FileInfo(fi), err
}

// Move renames a path; it refuses to replace one unless req.Overwrite.
func (c *Client) Move(ctx context.Context, req api.MoveRequest) (api.FileInfo, error) {
	var fi agentproto.FileInfo
	err := c.doJSON(ctx, http.MethodPost, "/files/move", nil, agentproto.MoveRequest{From: req.From, To: req.To, Overwrite: req.Overwrite}, &fi)
	return api.FileInfo(fi), err
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
	var res agentproto.TarResult
	err := c.doJSON(ctx, http.MethodPut, "/files/tar", url.Values{"path": {path}}, rawBody{body}, &res)
	return api.TarResult(res), err
}
