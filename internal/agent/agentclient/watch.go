package agentclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/agentproto"
	"github.com/hutchdev/hutch/internal/base/errdefs"
)

// Watch is a running file watch: the agent's events, in order. It is read
// by one goroutine; Close may be called from any.
type Watch struct {
	body io.ReadCloser
	dec  *json.Decoder
	err  error

	closeOnce sync.Once
}

// Watch watches the directory path (and, with recursive, the tree below
// it) and returns once the watch is in place: every change after it
// returns is reported. Close it to end it; cancelling ctx ends it too.
func (c *Client) Watch(ctx context.Context, path string, recursive bool) (*Watch, error) {
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	resp, err := c.do(ctx, http.MethodGet, "/files/watch", q, nil, "")
	if err != nil {
		return nil, err
	}
	return &Watch{body: resp.Body, dec: json.NewDecoder(resp.Body)}, nil
}

// Next returns the next event, waiting for it. io.EOF means the watch
// ended on the agent's side (the watched directory was removed); a stream
// that broke (the agent died, the watch was closed) is an error of class
// errdefs.ErrUnavailable, again on every later call.
func (w *Watch) Next() (api.WatchEvent, error) {
	if w.err != nil {
		return api.WatchEvent{}, w.err
	}
	var ev agentproto.WatchEvent
	if err := w.dec.Decode(&ev); err != nil {
		if err == io.EOF {
			w.err = io.EOF
		} else {
			w.err = errdefs.Wrap(errdefs.ErrUnavailable, "agent_stream_broken", err, "the file watch's stream broke")
		}
		return api.WatchEvent{}, w.err
	}
	return apiWatchEvent(ev), nil
}

// Close ends the watch; the agent then closes its inotify instance.
func (w *Watch) Close() error {
	var err error
	w.closeOnce.Do(func() { err = w.body.Close() })
	return err
}
