package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
)

// Secrets are write-only: these calls send values and get metadata back.
// No call returns a value; code inside the control plane reads them.

// CreateSecret creates a secret in the caller's tenant. A name already in
// use is an *Error with code secret_exists (409); a value over the
// server's limit has code secret_too_large (413). With req.Kind
// api.SecretKindRegistry and req.Registry a host, it is a registry
// password bound to that host: the only kind a pull's PasswordSecret
// takes, sent to that host alone. A kind and a host never change.
func (c *Client) CreateSecret(ctx context.Context, req api.CreateSecretRequest) (*api.Secret, error) {
	var out api.Secret
	if err := c.do(ctx, http.MethodPost, "/v1/secrets", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReplaceSecret replaces the value of an existing secret, and its
// description when req.Description is set. A missing secret is an *Error
// with code secret_not_found: it is never created.
func (c *Client) ReplaceSecret(ctx context.Context, name string, req api.ReplaceSecretRequest) (*api.Secret, error) {
	if name == "" {
		return nil, errNoName
	}
	var out api.Secret
	if err := c.do(ctx, http.MethodPut, secretPath(name), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSecrets lists the caller's tenant's secrets by name, without values.
func (c *Client) ListSecrets(ctx context.Context) (*api.SecretList, error) {
	var out api.SecretList
	if err := c.do(ctx, http.MethodGet, "/v1/secrets", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSecret returns a secret's metadata, without its value.
func (c *Client) GetSecret(ctx context.Context, name string) (*api.Secret, error) {
	if name == "" {
		return nil, errNoName
	}
	var out api.Secret
	if err := c.do(ctx, http.MethodGet, secretPath(name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSecret deletes a secret. An unknown name is an *Error with code
// secret_not_found.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	if name == "" {
		return errNoName
	}
	return c.do(ctx, http.MethodDelete, secretPath(name), nil, nil, nil)
}

// errNoName is returned, without a request, by calls given an empty name.
var errNoName = errors.New("client: empty secret name")

func secretPath(name string) string {
	return "/v1/secrets/" + url.PathEscape(name)
}
