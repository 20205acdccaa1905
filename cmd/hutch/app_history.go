package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// The history of an app's files: checkpoints of the dev sandbox and undo.

func newAppCheckpointCmd(e *env) *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "checkpoint [-m MESSAGE] APP",
		Short: "Save dev's files as they are",
		Long:  "Saves the dev sandbox's files as they are now; prints the checkpoint's id.",
		Args:  oneApp("checkpoint"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			cp, err := c.Checkpoint(cmd.Context(), id, api.CreateCheckpointRequest{Message: message})
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, cp)
			}
			fmt.Fprintln(e.stdout, cp.ID)
			fmt.Fprintf(e.stderr, "hutch: checkpoint %s: %d %s, %s\n", cp.ID, cp.Files, plural(cp.Files, "file", "files"), byteSize(cp.Bytes))
			return nil
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "a `message` describing the checkpoint")
	return cmd
}

func newAppCheckpointsCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoints APP",
		Short: "List an app's checkpoints",
		Args:  oneApp("checkpoints"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			list, err := c.Checkpoints(cmd.Context(), id)
			if err != nil {
				return err
			}
			now := time.Now()
			return printList(e.stdout, e.json, list.Checkpoints, []string{"ID", "KIND", "FILES", "SIZE", "AGE", "MESSAGE"}, func(cp api.Checkpoint) []string {
				return []string{cp.ID, orDash(cp.Kind), strconv.Itoa(cp.Files), byteSize(cp.Bytes), formatAge(now, cp.CreatedAt), orDash(oneLine(cp.Message))}
			})
		},
	}
}

func newAppUndoCmd(e *env) *cobra.Command {
	var (
		steps int
		to    string
	)
	cmd := &cobra.Command{
		Use:   "undo [--steps N | --to CHECKPOINT] APP",
		Short: "Bring back dev's files before the last task",
		Long: "Brings back the dev sandbox's files as they were before the last task, N\n" +
			"checkpoints back, or as a checkpoint holds them. The files as they were before\n" +
			"the undo are kept as a checkpoint, so an undo can be undone.",
		Args: oneApp("undo"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := undoRequest(steps, to)
			if err != nil {
				return err
			}
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			res, err := c.Undo(cmd.Context(), id, req)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, res)
			}
			fmt.Fprintln(e.stdout, res.Restored.ID)
			what := res.Restored.ID
			if res.Restored.Message != "" {
				what += " (" + oneLine(res.Restored.Message) + ")"
			}
			fmt.Fprintf(e.stderr, "hutch: restored checkpoint %s: %d %s changed\n", what, len(res.Changes), plural(len(res.Changes), "file", "files"))
			printChanges(e.stderr, res.Changes)
			if res.PreUndo.ID != "" {
				fmt.Fprintf(e.stderr, "hutch: to take the undo back: hutch app undo %s --to %s\n", args[0], res.PreUndo.ID)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&steps, "steps", 0, "go back `N` checkpoints (default 1)")
	cmd.Flags().StringVar(&to, "to", "", "go back to this `checkpoint` (hutch app checkpoints lists them)")
	return cmd
}

// undoRequest checks undo's flags: --steps or --to but not both.
func undoRequest(steps int, to string) (api.UndoRequest, error) {
	switch {
	case steps < 0:
		return api.UndoRequest{}, usagef("--steps must not be negative")
	case steps > 0 && to != "":
		return api.UndoRequest{}, usagef("give --steps or --to, not both")
	}
	return api.UndoRequest{Steps: steps, Checkpoint: to}, nil
}
