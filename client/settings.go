package client

import (
	"context"
	"net/http"

	"github.com/hutchdev/hutch/api"
)

// Settings returns the lifecycle settings in force and the server's
// read-only settings; it needs an admin key.
func (c *Client) Settings(ctx context.Context) (*api.SettingsView, error) {
	var out api.SettingsView
	if err := c.do(ctx, http.MethodGet, "/v1/settings", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchSettings changes the settings changes names (api.Settings' JSON
// names, each with its new value) and returns the settings in force
// then; the others stay as they are. It needs an admin key. The change
// applies at once to every sandbox and outlives a restart of the server.
func (c *Client) PatchSettings(ctx context.Context, changes map[string]any) (*api.SettingsView, error) {
	var out api.SettingsView
	if err := c.do(ctx, http.MethodPatch, "/v1/settings", nil, changes, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
