package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
)

// CreateSnapshot copies the files of sandbox id into a new snapshot; a
// running sandbox's processes are frozen while it is taken.
func (c *Client) CreateSnapshot(ctx context.Context, id string, req api.CreateSnapshotRequest) (*api.Snapshot, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.Snapshot
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "snapshots"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSnapshots lists the caller's snapshots, newest first; sandbox, when
// not empty, keeps one sandbox's.
func (c *Client) ListSnapshots(ctx context.Context, sandbox string) (*api.SnapshotList, error) {
	var q url.Values
	if sandbox != "" {
		q = url.Values{"sandbox": {sandbox}}
	}
	var out api.SnapshotList
	if err := c.do(ctx, http.MethodGet, "/v1/snapshots", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSnapshot returns one snapshot.
func (c *Client) GetSnapshot(ctx context.Context, id string) (*api.Snapshot, error) {
	if id == "" {
		return nil, errNoSnapshot
	}
	var out api.Snapshot
	if err := c.do(ctx, http.MethodGet, "/v1/snapshots/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSnapshot deletes a snapshot and its files.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	if id == "" {
		return errNoSnapshot
	}
	return c.do(ctx, http.MethodDelete, "/v1/snapshots/"+url.PathEscape(id), nil, nil, nil)
}

// Restore gives the running sandbox id exactly the snapshot's files; its
// processes end and it runs again.
func (c *Client) Restore(ctx context.Context, id string, req api.RestoreRequest) (*api.Sandbox, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.Sandbox
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "restore"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Fork starts req.Count sandboxes from sandbox id's files as they are now.
func (c *Client) Fork(ctx context.Context, id string, req api.ForkRequest) (*api.ForkResult, error) {
	if id == "" {
		return nil, errNoID
	}
	var out api.ForkResult
	if err := c.do(ctx, http.MethodPost, sandboxPath(id, "fork"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// errNoSnapshot is returned, without a request, by calls given an empty
// snapshot id.
var errNoSnapshot = errors.New("client: empty snapshot id")
