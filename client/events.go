package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutchdev/hutch/api"
)

// EventQuery filters and pages an event listing. The zero value lists the
// first page of every event, oldest first, with the server's default page
// size.
type EventQuery struct {
	// SandboxID keeps only one sandbox's events (Events only; an unknown
	// id gives an empty page). SandboxEvents takes the id as an argument.
	SandboxID string
	// Types keeps only events of these types (api.EventSandboxCreated, …).
	Types []string
	// After keeps only events recorded after this event id: a page's
	// NextCursor, or the id of the last event seen, to resume a tail.
	After string
	// Limit is the page size; zero is the server's default.
	Limit int
}

// query encodes q as the listing's query string; types are sent as
// repeated type parameters in the order given.
func (q EventQuery) query() url.Values {
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	for _, t := range q.Types {
		v.Add("type", t)
	}
	if q.SandboxID != "" {
		v.Set("sandbox", q.SandboxID)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// Events returns one page of the tenant's events, oldest first. Pass the
// answer's NextCursor as q.After for the next page. An empty NextCursor
// means the page held every event recorded so far; to see later ones, ask
// again with q.After set to the id of the last event received.
func (c *Client) Events(ctx context.Context, q EventQuery) (*api.EventList, error) {
	var out api.EventList
	if err := c.do(ctx, http.MethodGet, "/v1/events", q.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SandboxEvents returns one page of a sandbox's events, oldest first,
// paged like Events. A destroyed sandbox's events stay readable; an
// unknown id is an *Error with code sandbox_not_found (IsNotFound).
// q.SandboxID must be empty or id.
func (c *Client) SandboxEvents(ctx context.Context, id string, q EventQuery) (*api.EventList, error) {
	if id == "" {
		return nil, errNoID
	}
	if q.SandboxID != "" && q.SandboxID != id {
		return nil, fmt.Errorf("client: SandboxEvents of %q with a query for sandbox %q", id, q.SandboxID)
	}
	q.SandboxID = ""
	var out api.EventList
	if err := c.do(ctx, http.MethodGet, sandboxPath(id, "events"), q.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
