package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/hutchdev/hutch/api"
)

// Watch is a running watch of a sandbox directory: its changes, in order,
// as api.WatchEvent values (see that type for what each means). It is read
// by one goroutine; Close may be called from any, and ends a Next that is
// waiting.
type Watch struct {
	r   *sseReader
	err error // sticky: returned by every Next after the first failure

	closeOnce sync.Once
	closeErr  error
}

// WatchFiles watches the directory path of a sandbox for changes, and with
// recursive every directory below it on the same file system, including
// those made later. It returns once the watch is in place, so every
// change after it returns is reported. Paths in events are relative to
// path. Read events with Next; Close the watch (or cancel ctx) to end it.
//
// A path that is missing is an *Error with code file_not_found; one that
// is not a directory, not_a_directory; too many watches open in the
// sandbox, watch_limit.
func (c *Client) WatchFiles(ctx context.Context, id, path string, recursive bool) (*Watch, error) {
	if id == "" {
		return nil, errNoID
	}
	q := url.Values{"path": {path}}
	if recursive {
		q.Set("recursive", "true")
	}
	p := sandboxPath(id, "files", "watch")
	resp, err := c.send(ctx, request{method: http.MethodGet, path: p, query: q, accept: "text/event-stream"})
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		closeBody(resp.Body)
		return nil, fmt.Errorf("client: %s answered %q, not an event stream", p, ct)
	}
	return &Watch{r: newSSEReader(resp.Body)}, nil
}

// Next waits for the next change and returns it. It returns io.EOF when
// the server ended the watch (the watched directory was removed, after a
// remove event for "."), and the context's or the connection's error when
// those end it. An event of type api.WatchOverflow means changes were
// lost: rescan what you mirror.
func (w *Watch) Next() (api.WatchEvent, error) {
	if w.err != nil {
		return api.WatchEvent{}, w.err
	}
	for {
		raw, err := w.r.next()
		if err != nil {
			w.err = err
			return api.WatchEvent{}, err
		}
		if raw.Data == "" {
			continue
		}
		var ev api.WatchEvent
		if err := json.Unmarshal([]byte(raw.Data), &ev); err != nil {
			w.err = fmt.Errorf("client: decode watch event: %w", err)
			return api.WatchEvent{}, w.err
		}
		if ev.Type == "" {
			ev.Type = raw.Type
		}
		return ev, nil
	}
}

// Close ends the watch; the server then closes it in the sandbox. It is
// safe to call more than once.
func (w *Watch) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.r.close() })
	return w.closeErr
}
