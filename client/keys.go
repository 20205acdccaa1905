package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
)

// CreateKey creates an API key in the caller's tenant. The answer's Secret
// is the key itself; the server stores it hashed and never shows it again.
func (c *Client) CreateKey(ctx context.Context, req api.CreateKeyRequest) (*api.Key, error) {
	var out api.Key
	if err := c.do(ctx, http.MethodPost, "/v1/keys", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListKeys lists the API keys of the caller's tenant, without secrets.
func (c *Client) ListKeys(ctx context.Context) (*api.KeyList, error) {
	var out api.KeyList
	if err := c.do(ctx, http.MethodGet, "/v1/keys", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteKey revokes an API key. An unknown id is an *Error with code
// key_not_found.
func (c *Client) DeleteKey(ctx context.Context, id string) error {
	if id == "" {
		return errNoID
	}
	return c.do(ctx, http.MethodDelete, "/v1/keys/"+url.PathEscape(id), nil, nil, nil)
}
