package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newForkCmd is `hutch fork ID [--count N]`: new sandboxes from a
// sandbox's files as they are now; it prints their ids.
func newForkCmd(e *env) *cobra.Command {
	var (
		count  int
		labels kvFlag
	)
	cmd := &cobra.Command{
		Use:   "fork ID [--count N]",
		Short: "Start new sandboxes from a sandbox's files as they are now",
		Long: "Starts N sandboxes, each with a copy of the sandbox's files, its template, env,\n" +
			"working directory, limits, user and network policy (not its processes or\n" +
			"memory), and prints their ids.",
		Args:              nArgs(1, 1, "fork takes one sandbox id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 || count > api.MaxForkCount {
				return usagef("--count must be from 1 to %d", api.MaxForkCount)
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			res, err := c.Fork(cmd.Context(), args[0], api.ForkRequest{Count: count, Labels: labels.m})
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, res)
			}
			for _, sb := range res.Sandboxes {
				fmt.Fprintln(e.stdout, sb.ID)
			}
			fmt.Fprintf(e.stderr, "hutch: forked %s %d %s (processes paused %s)\n", args[0], len(res.Sandboxes),
				plural(len(res.Sandboxes), "time", "times"), time.Duration(res.PauseMS)*time.Millisecond)
			return nil
		},
	}
	cmd.Flags().IntVar(&count, "count", 1, "how many sandboxes to start")
	cmd.Flags().Var(&labels, "label", "label of each new sandbox, over the sandbox's own (repeatable)")
	return cmd
}
