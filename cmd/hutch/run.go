package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// destroyTimeout bounds run's clean-up, which outlives Ctrl-C.
const destroyTimeout = 30 * time.Second

// newRunCmd is `hutch run [flags] [--] CMD…`: create a sandbox, stream
// the command, destroy the sandbox whatever happened, exit with the
// command's status.
func newRunCmd(e *env) *cobra.Command {
	var (
		cf   createFlags
		ef   execFlags
		keep bool
	)
	cmd := &cobra.Command{
		Use:   "run [create and exec flags] [--] CMD…",
		Short: "Create a sandbox, run a command in it, destroy it",
		Long: "Creates a sandbox, runs CMD in it as exec does, destroys the sandbox whatever\n" +
			"happened (unless --keep) and exits with the command's status.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) (retErr error) {
			argv, err := commandArgs(cmd, args, 0)
			if err != nil {
				return err
			}
			if len(argv) == 0 {
				return usagef("run needs a command")
			}
			ctx := cmd.Context()
			c, sb, err := cf.create(ctx, e)
			if err != nil {
				return err
			}
			if keep {
				fmt.Fprintf(e.stderr, "hutch: sandbox %s (kept)\n", sb.ID)
			} else {
				defer func() {
					dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), destroyTimeout)
					defer cancel()
					if err := c.DeleteSandbox(dctx, sb.ID); err != nil {
						fmt.Fprintf(e.stderr, "hutch: destroy sandbox %s: %s\n", sb.ID, err)
						if retErr == nil {
							retErr = err
						}
					}
				}()
			}
			return streamExec(ctx, e, c, sb.ID, argv, ef)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cf.register(cmd.Flags())
	ef.register(cmd.Flags(), "workdir", "exec-timeout")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the sandbox instead of destroying it")
	return cmd
}
