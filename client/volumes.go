package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
)

// CreateVolume makes a named volume. A size the server's filesystem cannot
// enforce is an *Error with code quota_unsupported unless
// req.SizeBestEffort.
func (c *Client) CreateVolume(ctx context.Context, req api.CreateVolumeRequest) (*api.Volume, error) {
	var out api.Volume
	if err := c.do(ctx, http.MethodPost, "/v1/volumes", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListVolumes lists the caller's volumes by name.
func (c *Client) ListVolumes(ctx context.Context) (*api.VolumeList, error) {
	var out api.VolumeList
	if err := c.do(ctx, http.MethodGet, "/v1/volumes", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetVolume returns one volume.
func (c *Client) GetVolume(ctx context.Context, name string) (*api.Volume, error) {
	if name == "" {
		return nil, errNoVolume
	}
	var out api.Volume
	if err := c.do(ctx, http.MethodGet, "/v1/volumes/"+url.PathEscape(name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteVolume deletes a volume and its files; one a sandbox not yet
// destroyed mounts is an *Error with code volume_in_use (409).
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	if name == "" {
		return errNoVolume
	}
	return c.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(name), nil, nil, nil)
}

// errNoVolume is returned, without a request, by calls given an empty
// volume name.
var errNoVolume = errors.New("client: empty volume name")
