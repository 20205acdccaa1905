package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/hutchdev/hutch/api"
)

// Nodes lists the nodes of the fleet, with their state (active,
// draining, or lost: no heartbeat for 10 s) and load; it needs an admin
// key.
func (c *Client) Nodes(ctx context.Context) (*api.NodeList, error) {
	var out api.NodeList
	if err := c.do(ctx, http.MethodGet, "/v1/nodes", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Node shows one node; it needs an admin key.
func (c *Client) Node(ctx context.Context, name string) (*api.Node, error) {
	if name == "" {
		return nil, errNoNode
	}
	var out api.Node
	if err := c.do(ctx, http.MethodGet, "/v1/nodes/"+url.PathEscape(name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DrainNode drains a node: it takes no new sandboxes, and once deadline
// has passed (rounded up to whole seconds; 0: never) it stops those it
// still runs. It needs an admin key.
func (c *Client) DrainNode(ctx context.Context, name string, deadline time.Duration) (*api.Node, error) {
	if name == "" {
		return nil, errNoNode
	}
	req := api.DrainNodeRequest{DeadlineS: int((deadline + time.Second - 1) / time.Second)}
	var out api.Node
	if err := c.do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(name)+"/drain", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ActivateNode ends a node's drain: it takes new sandboxes again. It
// needs an admin key.
func (c *Client) ActivateNode(ctx context.Context, name string) (*api.Node, error) {
	if name == "" {
		return nil, errNoNode
	}
	var out api.Node
	if err := c.do(ctx, http.MethodPost, "/v1/nodes/"+url.PathEscape(name)+"/activate", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveNode removes a lost node from the fleet; one still heartbeating
// is an *Error with code node_not_lost (409). It needs an admin key.
func (c *Client) RemoveNode(ctx context.Context, name string) error {
	if name == "" {
		return errNoNode
	}
	return c.do(ctx, http.MethodDelete, "/v1/nodes/"+url.PathEscape(name), nil, nil, nil)
}

// errNoNode is returned, without a request, by calls given an empty node
// name.
var errNoNode = errors.New("client: a node's name is required")
