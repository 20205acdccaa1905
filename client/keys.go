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

// DeleteKey revokes an API key: it stops working, and every request,
// stream and WebSocket it opened ends. An unknown id is an *Error with
// code key_not_found; a key more powerful than the caller's, 403
// admin_required; the last admin key, 409 last_admin_key.
func (c *Client) DeleteKey(ctx context.Context, id string) error {
	return c.deleteKey(ctx, id, nil)
}

// DeleteKeyCascade revokes an API key as DeleteKey does, and with it every
// key it created, and every key those created, transitively: what to do
// with a leaked key, whose holder may have made keys of its own. If any of
// them is beyond the caller's role, none is revoked.
func (c *Client) DeleteKeyCascade(ctx context.Context, id string) error {
	return c.deleteKey(ctx, id, url.Values{"cascade": {"true"}})
}

func (c *Client) deleteKey(ctx context.Context, id string, q url.Values) error {
	if id == "" {
		return errNoID
	}
	return c.do(ctx, http.MethodDelete, "/v1/keys/"+url.PathEscape(id), q, nil, nil)
}
