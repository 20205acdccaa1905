package main

import (
	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/client"
)

// newShellCmd is `hutch shell [--cwd DIR] ID [-- CMD…]`: a terminal in the
// sandbox (its user's login shell by default). The local terminal goes
// into raw mode, window resizes follow, and hutch exits with the remote
// status.
func newShellCmd(e *env) *cobra.Command {
	var cwd string
	cmd := &cobra.Command{
		Use:               "shell [--cwd DIR] ID [-- CMD…]",
		Short:             "Open a terminal in a sandbox",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			pos, err := commandArgs(cmd, args, 1)
			if err != nil {
				return err
			}
			if len(pos) < 1 {
				return usagef("shell needs a sandbox id")
			}
			if e.json {
				return usagef("shell does not take --json")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			return openTerminal(cmd.Context(), e, c, pos[0], client.TerminalOptions{Cmd: pos[1:], Cwd: cwd})
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&cwd, "cwd", "", "working `directory`")
	return cmd
}
