package main

import (
	"context"

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
	q := client.EventQuery{Types: types.vals, After: *after}
	return showEvents(ctx, e, q, *asJSON, follow,
		func(q client.EventQuery) (*api.EventList, error) { return c.AppEvents(ctx, id, q) },
		func(q client.EventQuery) (*client.EventStream, error) { return c.StreamAppEvents(ctx, id, q) })
}
