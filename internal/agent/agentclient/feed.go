package agentclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Event is one of the agent's pushed events: a hello first, then process
// exits, numbered by Seq.
type Event struct {
	Seq uint64
	// Hello opens the feed: its Seq is the agent's newest event's, and a
	// Seq below what the reader saw means another agent (a restart).
	Hello bool
	// Exited is the process that exited, for the others.
	Exited *api.Process
}

// Feed is the agent's event feed (agentproto.FeatureEvents).
type Feed struct {
	body io.ReadCloser
	dec  *json.Decoder
}

// Events opens the agent's event feed from after on: a hello, the
// retained events numbered above after, then each new one. An agent
// without the feature is an error of code agent_too_old.
func (c *Client) Events(ctx context.Context, after uint64) (*Feed, error) {
	if !c.Has(agentproto.FeatureEvents) {
		return nil, c.tooOld("the event feed", agentproto.FeatureEvents)
	}
	resp, err := c.do(ctx, http.MethodGet, "/events", url.Values{"after": {strconv.FormatUint(after, 10)}}, nil, "")
	if err != nil {
		return nil, err
	}
	return &Feed{body: resp.Body, dec: json.NewDecoder(resp.Body)}, nil
}

// Next waits for the next event; an error of class errdefs.ErrUnavailable
// when the feed broke.
func (f *Feed) Next() (Event, error) {
	var ev agentproto.Event
	if err := f.dec.Decode(&ev); err != nil {
		return Event{}, errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the agent's event feed broke")
	}
	out := Event{Seq: ev.Seq, Hello: ev.Type == agentproto.EventHello}
	if ev.Type == agentproto.EventProcessExited && ev.Process != nil {
		p := apiProcess(*ev.Process)
		out.Exited = &p
	}
	return out, nil
}

// Close ends the feed.
func (f *Feed) Close() error { return f.body.Close() }
