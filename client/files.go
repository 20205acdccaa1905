package client

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
)

// Paths inside a sandbox are as the sandbox sees them: absolute, or
// relative to the sandbox's working directory. The server refuses a path
// that leaves the sandbox (path_outside_sandbox).

// ReadFile streams a file out of a sandbox. The caller must close the
// reader. A missing file is an *Error with code file_not_found; a
// directory, is_a_directory.
func (c *Client) ReadFile(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return c.download(ctx, id, "files", path, "application/octet-stream")
}

// WriteFile streams r into a file in a sandbox, creating or replacing it
// atomically, and returns the file's new FileInfo. Only the permission
// bits of mode are sent, as octal; a zero mode leaves the choice to the
// server (0644 for a new file). WriteFile reads r to its end but does not
// close it.
func (c *Client) WriteFile(ctx context.Context, id, path string, mode fs.FileMode, r io.Reader) (*api.FileInfo, error) {
	q := url.Values{"path": {path}}
	if mode != 0 {
		q.Set("mode", FormatMode(mode))
	}
	var out api.FileInfo
	if err := c.upload(ctx, id, "files", q, "application/octet-stream", r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveFile removes a file or an empty directory; with recursive, a
// directory and everything below it.
func (c *Client) RemoveFile(ctx context.Context, id, path string, recursive bool) error {
	if id == "" {
		return errNoID
	}
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	return c.do(ctx, http.MethodDelete, sandboxPath(id, "files"), q, nil, nil)
}

// ListFiles lists a directory of a sandbox.
func (c *Client) ListFiles(ctx context.Context, id, path string) (*api.FileList, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.FileList
	if err := c.do(ctx, http.MethodGet, sandboxPath(id, "files", "list"), url.Values{"path": {path}}, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StatFile describes one path of a sandbox without following a final
// symlink.
func (c *Client) StatFile(ctx context.Context, id, path string) (*api.FileInfo, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.FileInfo
	if err := c.do(ctx, http.MethodGet, sandboxPath(id, "files", "stat"), url.Values{"path": {path}}, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Mkdir creates a directory and any missing parents (mkdir -p) and
// returns it.
func (c *Client) Mkdir(ctx context.Context, id string, req api.MkdirRequest) (*api.FileInfo, error) {
	return c.fileOp(ctx, id, "mkdir", req)
}

// Move renames a file or directory inside a sandbox and returns it at its
// new path. Without req.Overwrite an existing destination is an *Error
// with code file_exists.
func (c *Client) Move(ctx context.Context, id string, req api.MoveRequest) (*api.FileInfo, error) {
	return c.fileOp(ctx, id, "move", req)
}

// fileOp is a JSON POST under /files that answers a FileInfo.
func (c *Client) fileOp(ctx context.Context, id, op string, req any) (*api.FileInfo, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.FileInfo
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "files", op), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DownloadTar streams a directory of a sandbox as a tar archive whose
// entries are relative to path. The caller must close the reader.
func (c *Client) DownloadTar(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return c.download(ctx, id, "files/tar", path, "application/x-tar")
}

// UploadTar streams the tar archive r into a sandbox, extracting it under
// the directory path (created if missing), and reports what it wrote. The
// server refuses entries that would leave path and entry types it does not
// support (unsupported_tar_entry). UploadTar reads r to its end but does
// not close it.
func (c *Client) UploadTar(ctx context.Context, id, path string, r io.Reader) (*api.TarResult, error) {
	var out api.TarResult
	if err := c.upload(ctx, id, "files/tar", url.Values{"path": {path}}, "application/x-tar", r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// download GETs a raw body under a sandbox and hands it to the caller.
func (c *Client) download(ctx context.Context, id, sub, path, accept string) (io.ReadCloser, error) {
	if id == "" {
		return nil, errNoID
	}
	resp, err := c.send(ctx, request{
		method: http.MethodGet,
		path:   sandboxPath(id, sub),
		query:  url.Values{"path": {path}},
		accept: accept,
	})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// upload PUTs the raw body r under a sandbox and decodes the JSON answer
// into out.
func (c *Client) upload(ctx context.Context, id, sub string, q url.Values, contentType string, r io.Reader, out any) error {
	if id == "" {
		return errNoID
	}
	if r == nil {
		r = http.NoBody
	}
	resp, err := c.send(ctx, request{
		method:      http.MethodPut,
		path:        sandboxPath(id, sub),
		query:       q,
		body:        r,
		contentType: contentType,
	})
	if err != nil {
		return err
	}
	defer closeBody(resp.Body)
	return decodeJSON(resp, out)
}

// FormatMode formats the permission bits of m as the API writes modes:
// four octal digits such as "0644". Setuid, setgid and sticky bits are
// included as the leading digit.
func FormatMode(m fs.FileMode) string {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return fmt.Sprintf("%04o", v)
}
