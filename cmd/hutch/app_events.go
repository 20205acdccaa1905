package main

import (
	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// newAppEventsCmd is `hutch app events [-f] APP`: the app's own event
// log, as hutch events prints the tenant's.
func newAppEventsCmd(e *env) *cobra.Command {
	var ef eventFlags
	cmd := &cobra.Command{
		Use:   "events [-f] [--type T]… [--after EVENT] APP",
		Short: "Print (-f: follow) an app's events",
		Args:  oneApp("events"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, id, err := appClient(ctx, e, args[0])
			if err != nil {
				return err
			}
			q := client.EventQuery{Types: ef.types, After: ef.after}
			return showEvents(ctx, e, q, ef.follow,
				func(q client.EventQuery) (*api.EventList, error) { return c.AppEvents(ctx, id, q) },
				func(q client.EventQuery) (*client.EventStream, error) { return c.StreamAppEvents(ctx, id, q) })
		},
	}
	ef.register(cmd.Flags(), "task.failed")
	return cmd
}
