package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/hutchdev/hutch/api"
)

// PullTemplate makes a template from an image in a registry; the call
// returns once the image is pulled and unpacked. A name in use is an
// *Error with code template_exists (409). req.PasswordSecret must name a
// registry secret bound to the image's registry: another kind of secret
// is secret_not_registry (400), one bound to another host
// secret_registry_mismatch (400).
func (c *Client) PullTemplate(ctx context.Context, req api.CreateTemplateRequest) (*api.Template, error) {
	var out api.Template
	if err := c.do(ctx, http.MethodPost, "/v1/templates", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ImportTemplate makes the template name from an image archive read from
// r: an OCI image layout as a tar, or what `docker save` writes. It reads
// r to its end but does not close it.
func (c *Client) ImportTemplate(ctx context.Context, name string, r io.Reader) (*api.Template, error) {
	if name == "" {
		return nil, errNoTemplate
	}
	resp, err := c.send(ctx, request{method: http.MethodPost, path: "/v1/templates", query: url.Values{"name": {name}},
		body: r, contentType: "application/x-tar"})
	if err != nil {
		return nil, err
	}
	defer closeBody(resp.Body)
	var out api.Template
	return &out, decodeJSON(resp, &out)
}

// ListTemplates lists the caller's tenant's templates by name.
func (c *Client) ListTemplates(ctx context.Context) (*api.TemplateList, error) {
	var out api.TemplateList
	if err := c.do(ctx, http.MethodGet, "/v1/templates", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetTemplate returns one template.
func (c *Client) GetTemplate(ctx context.Context, name string) (*api.Template, error) {
	if name == "" {
		return nil, errNoTemplate
	}
	var out api.Template
	if err := c.do(ctx, http.MethodGet, templatePath(name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteTemplate deletes a template. One that a sandbox not yet destroyed
// starts from is an *Error with code template_in_use (409).
func (c *Client) DeleteTemplate(ctx context.Context, name string) error {
	if name == "" {
		return errNoTemplate
	}
	return c.do(ctx, http.MethodDelete, templatePath(name), nil, nil, nil)
}

// errNoTemplate is returned, without a request, by calls given an empty
// template name.
var errNoTemplate = errors.New("client: empty template name")

func templatePath(name string) string {
	return "/v1/templates/" + url.PathEscape(name)
}
