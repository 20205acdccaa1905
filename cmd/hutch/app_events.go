package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// appEvents is `hutch app events [-f] APP`: the app's own event log, as
// hutch events prints the tenant's.
func appEvents(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app events", "hutch app events [-f] [--type T]… [--after EVENT] [--json] APP")
	var follow bool
	fs.BoolVar(&follow, "f", false, "follow: print new events as they are recorded, until interrupted")
	fs.BoolVar(&follow, "follow", false, "same as -f")
	var types listFlag
	fs.Var(&types, "type", "only events of this `type`, such as task.failed (repeatable)")
	after := fs.String("after", "", "only events after the event with this `id`")
	asJSON := fs.Bool("json", false, "print each event as one line of JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	print := func(ev api.Event) error {
		if *asJSON {
			return json.NewEncoder(e.stdout).Encode(ev)
		}
		return printEvent(e.stdout, ev)
	}
	q := client.EventQuery{Types: types.vals, After: *after}
	if follow {
		return followAppEvents(ctx, e, c, id, q, print)
	}
	for {
		page, err := c.AppEvents(ctx, id, q)
		if err != nil {
			return err
		}
		for _, ev := range page.Events {
			if err := print(ev); err != nil {
				return err
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		q.After = page.NextCursor
	}
}

// followAppEvents prints an app's events as they come until ctx ends,
// reopening a broken stream after the last event printed, as
// followEvents does the tenant's.
func followAppEvents(ctx context.Context, e *env, c *client.Client, id string, q client.EventQuery, print func(api.Event) error) error {
	open := func() (*client.EventStream, error) { return c.StreamAppEvents(ctx, id, q) }
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
