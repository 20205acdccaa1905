package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
	// NextCursor, or the id of the last event seen (EventStream.LastID),
	// to resume a tail. Streams send it as the Last-Event-ID header.
	After string
	// Limit is the page size; zero is the server's default. Streams
	// ignore it.
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

// EventStream is a live stream of events: every event after the query's
// After, oldest first, then each new one as the server records it, with
// no end until Close, the context or the connection ends it. It is not
// safe for concurrent use, except Close, which may be called from another
// goroutine to end a blocked Next.
//
// To resume after a broken stream, open a new one with q.After set to
// LastID: it starts with exactly the events this one did not deliver.
type EventStream struct {
	r      *sseReader
	cancel context.CancelFunc
	last   string
}

// StreamEvents opens a stream of the tenant's events matching q (its
// SandboxID and Types filters; Limit does not apply). q.After, when set,
// is sent as the Last-Event-ID header: the stream starts after that
// event. Too many open streams (the tenant's streams quota) is an *Error
// with code quota_exceeded
// (status 429).
func (c *Client) StreamEvents(ctx context.Context, q EventQuery) (*EventStream, error) {
	return c.streamEvents(ctx, "/v1/events", q)
}

// StreamSandboxEvents opens a stream of one sandbox's events, as
// StreamEvents. An unknown id is an *Error with code sandbox_not_found
// (IsNotFound). The stream of a destroyed sandbox stays open though no
// event will come. q.SandboxID must be empty or id.
func (c *Client) StreamSandboxEvents(ctx context.Context, id string, q EventQuery) (*EventStream, error) {
	if id == "" {
		return nil, errNoID
	}
	if q.SandboxID != "" && q.SandboxID != id {
		return nil, fmt.Errorf("client: StreamSandboxEvents of %q with a query for sandbox %q", id, q.SandboxID)
	}
	q.SandboxID = ""
	return c.streamEvents(ctx, sandboxPath(id, "events"), q)
}

func (c *Client) streamEvents(ctx context.Context, path string, q EventQuery) (*EventStream, error) {
	after := q.After
	q.After, q.Limit = "", 0
	ctx, cancel := context.WithCancel(ctx)
	req, err := c.newRequest(ctx, request{method: http.MethodGet, path: path, query: q.query(), accept: "text/event-stream"})
	if err != nil {
		cancel()
		return nil, err
	}
	if after != "" {
		req.Header.Set("Last-Event-ID", after)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer cancel()
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		closeBody(resp.Body)
		cancel()
		return nil, fmt.Errorf("client: %s answered %q, not an event stream", path, ct)
	}
	return &EventStream{r: newSSEReader(resp.Body), cancel: cancel, last: after}, nil
}

// Next blocks until the next event and returns it. It returns io.EOF when
// the server ended the stream (it is shutting down), and the context's or
// the connection's error when those end it; resume after LastID.
func (s *EventStream) Next() (api.Event, error) {
	for {
		ev, err := s.r.next()
		if err != nil {
			return api.Event{}, err
		}
		if ev.Data == "" {
			continue
		}
		var e api.Event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return api.Event{}, fmt.Errorf("client: decode event %q: %w", ev.ID, err)
		}
		if ev.ID != "" {
			s.last = ev.ID
		} else if e.ID != "" {
			s.last = e.ID
		}
		return e, nil
	}
}

// LastID is the id of the last event Next returned, or the After the
// stream was opened with when none yet: where a new stream resumes.
func (s *EventStream) LastID() string { return s.last }

// Close ends the stream and releases its connection.
func (s *EventStream) Close() error {
	s.cancel()
	return s.r.close()
}
