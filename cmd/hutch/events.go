package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// maxReconnectDelay bounds the wait between attempts to reopen a followed
// stream.
const maxReconnectDelay = 10 * time.Second

// runEvents is `hutch events`: the tenant's event log, or one sandbox's,
// one line per event, oldest first. With -f it then follows the log live,
// reopening the stream after the last event printed if it breaks.
func runEvents(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "events", "hutch events [-f] [--sandbox ID] [--type T]… [--after EVENT] [--json]")
	var follow bool
	fs.BoolVar(&follow, "f", false, "follow: print new events as they are recorded, until interrupted")
	fs.BoolVar(&follow, "follow", false, "same as -f")
	sandboxID := fs.String("sandbox", "", "only the events of the sandbox with this `id`")
	var types listFlag
	fs.Var(&types, "type", "only events of this `type`, such as sandbox.created (repeatable)")
	after := fs.String("after", "", "only events after the event with this `id`")
	asJSON := fs.Bool("json", false, "print each event as one line of JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "events takes no arguments; use --sandbox ID for one sandbox's")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	q := client.EventQuery{Types: types.vals, After: *after}
	return showEvents(ctx, e, q, *asJSON, follow,
		func(q client.EventQuery) (*api.EventList, error) {
			if *sandboxID != "" {
				return c.SandboxEvents(ctx, *sandboxID, q)
			}
			return c.Events(ctx, q)
		},
		func(q client.EventQuery) (*client.EventStream, error) {
			if *sandboxID != "" {
				return c.StreamSandboxEvents(ctx, *sandboxID, q)
			}
			return c.StreamEvents(ctx, q)
		})
}

// showEvents prints the events q selects, as text or JSON lines: every
// page of them, or, with follow, a stream until ctx ends.
func showEvents(ctx context.Context, e *env, q client.EventQuery, asJSON, follow bool,
	page func(client.EventQuery) (*api.EventList, error), stream func(client.EventQuery) (*client.EventStream, error)) error {
	print := func(ev api.Event) error {
		if asJSON {
			return json.NewEncoder(e.stdout).Encode(ev)
		}
		return printEvent(e.stdout, ev)
	}
	if follow {
		return followEvents(ctx, e, q, stream, print)
	}
	for {
		p, err := page(q)
		if err != nil {
			return err
		}
		for _, ev := range p.Events {
			if err := print(ev); err != nil {
				return err
			}
		}
		if p.NextCursor == "" {
			return nil
		}
		q.After = p.NextCursor
	}
}

// followEvents prints the events of a stream until ctx ends. A stream
// that breaks (the server restarted, the network dropped) is reopened
// after the last event printed, so none is printed twice or missed; an
// answer that retrying cannot change (a bad query, an unknown sandbox, a
// wrong key) ends the command.
func followEvents(ctx context.Context, e *env, q client.EventQuery, stream func(client.EventQuery) (*client.EventStream, error),
	print func(api.Event) error) error {
	open := func() (*client.EventStream, error) { return stream(q) }
	st, err := open()
	if err != nil {
		return err
	}
	for {
		ev, err := st.Next()
		if err == nil {
			if err := print(ev); err != nil {
				st.Close()
				return err
			}
			continue
		}
		st.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q.After = st.LastID()
		if errors.Is(err, io.EOF) {
			err = errors.New("the server ended it")
		}
		fmt.Fprintf(e.stderr, "hutch: event stream lost (%s); reconnecting\n", err)
		if st, err = reopen(ctx, open); err != nil {
			return err
		}
	}
}

// reopen calls open until it succeeds, waiting longer after each failure,
// or until it fails in a way retrying cannot change.
func reopen(ctx context.Context, open func() (*client.EventStream, error)) (*client.EventStream, error) {
	delay := 500 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		st, err := open()
		if err == nil {
			return st, nil
		}
		if s := client.StatusCode(err); s != 0 && s < 500 && s != http.StatusTooManyRequests {
			return nil, err
		}
		delay = min(2*delay, maxReconnectDelay)
	}
}

// printEvent writes one event as a line: time, type, sandbox, message.
func printEvent(w io.Writer, ev api.Event) error {
	_, err := fmt.Fprintf(w, "%s  %-17s  %-26s  %s\n", ev.CreatedAt.Local().Format(time.RFC3339),
		ev.Type, orDash(ev.SandboxID), oneLine(ev.Message))
	return err
}

// oneLine keeps a message on its line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// listFlag is a repeatable flag gathering its values in order.
type listFlag struct {
	vals []string
}

func (f *listFlag) Set(s string) error {
	f.vals = append(f.vals, s)
	return nil
}

func (f *listFlag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.vals, ",")
}
