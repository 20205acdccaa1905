package main

import (
	"github.com/spf13/cobra"
)

// newAttachCmd is `hutch attach ID PID`: this terminal joined to a running
// process, as docker attach does: its output (from --from, by default all
// that is still buffered) and, unless --no-stdin, our stdin as its input.
// A process on a terminal gets raw mode and resizes, and Ctrl-C goes to
// it; otherwise Ctrl-C detaches and leaves it running.
func newAttachCmd(e *env) *cobra.Command {
	var (
		from    int64
		noStdin bool
	)
	cmd := &cobra.Command{
		Use:               "attach [flags] ID PID",
		Short:             "Attach to a running process's output and input",
		Long:              "Joins this terminal to a running process (hutch ps lists them) until it exits,\nthen exits with its status.",
		Args:              nArgs(2, 2, "attach takes a sandbox id and a process id"),
		ValidArgsFunction: completeProcesses(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			if e.json {
				return usagef("attach does not take --json")
			}
			pid, err := parsePID(args[1])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.AttachTerminal(cmd.Context(), args[0], pid, from)
			if err != nil {
				return err
			}
			if noStdin {
				e.stdin = nil
			}
			return joinTerminal(cmd.Context(), e, t, t.Process.PTY)
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "replay the output from this byte `offset` (0: all still buffered)")
	cmd.Flags().BoolVar(&noStdin, "no-stdin", false, "do not send stdin to the process")
	return cmd
}
