package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// maxReconnectDelay bounds the wait between attempts to reopen a followed
// stream.
const maxReconnectDelay = 10 * time.Second

// eventFlags are the flags of events and app events.
type eventFlags struct {
	follow bool
	types  []string
	after  string
}

func (f *eventFlags) register(fs *pflag.FlagSet, example string) {
	fs.BoolVarP(&f.follow, "follow", "f", false, "follow: print new events as they are recorded, until interrupted")
	fs.StringArrayVar(&f.types, "type", nil, "only events of this `type`, such as "+example+" (repeatable)")
	fs.StringVar(&f.after, "after", "", "only events after the event with this `id`")
}

// newEventsCmd is `hutch events`: the tenant's event log, or one
// sandbox's, one line per event (under --json, the API's event), oldest
// first. With -f it then follows the log live, reopening the stream after
// the last event printed if it breaks.
func newEventsCmd(e *env) *cobra.Command {
	var (
		ef        eventFlags
		sandboxID string
	)
	cmd := &cobra.Command{
		Use:   "events [-f] [--sandbox ID] [--type T]… [--after EVENT]",
		Short: "Print the event log; -f follows it live",
		Args:  nArgs(0, 0, "events takes no arguments; use --sandbox ID for one sandbox's"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			q := client.EventQuery{Types: ef.types, After: ef.after}
			return showEvents(ctx, e, q, ef.follow,
				func(q client.EventQuery) (*api.EventList, error) {
					if sandboxID != "" {
						return c.SandboxEvents(ctx, sandboxID, q)
					}
					return c.Events(ctx, q)
				},
				func(q client.EventQuery) (*client.EventStream, error) {
					if sandboxID != "" {
						return c.StreamSandboxEvents(ctx, sandboxID, q)
					}
					return c.StreamEvents(ctx, q)
				})
		},
	}
	ef.register(cmd.Flags(), "sandbox.created")
	cmd.Flags().StringVar(&sandboxID, "sandbox", "", "only the events of the sandbox with this `id`")
	return cmd
}

// showEvents prints the events q selects, as text or JSON lines: every
// page of them, or, with follow, a stream until ctx ends.
func showEvents(ctx context.Context, e *env, q client.EventQuery, follow bool,
	page func(client.EventQuery) (*api.EventList, error), stream func(client.EventQuery) (*client.EventStream, error)) error {
	print := func(ev api.Event) error {
		if e.json {
			return printJSONLine(e.stdout, ev)
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
