package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/hutchdev/hutch/api"
)

// The history of an app's files: checkpoints of the dev sandbox and undo.

func appCheckpoint(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app checkpoint", "hutch app checkpoint [-m MESSAGE] [--json] APP\n\n"+
		"Saves the dev sandbox's files as they are now; prints the checkpoint's id.")
	var message string
	fs.StringVar(&message, "m", "", "a `message` describing the checkpoint")
	fs.StringVar(&message, "message", "", "same as -m")
	asJSON := fs.Bool("json", false, "print the checkpoint as JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	cp, err := c.Checkpoint(ctx, id, api.CreateCheckpointRequest{Message: message})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, cp)
	}
	fmt.Fprintln(e.stdout, cp.ID)
	fmt.Fprintf(e.stderr, "hutch: checkpoint %s: %d %s, %s\n", cp.ID, cp.Files, plural(cp.Files, "file", "files"), byteSize(cp.Bytes))
	return nil
}

func appCheckpoints(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app checkpoints", "hutch app checkpoints [--json] APP")
	asJSON := fs.Bool("json", false, "print the checkpoints as JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	list, err := c.Checkpoints(ctx, id)
	if err != nil {
		return err
	}
	now := time.Now()
	return printList(e.stdout, *asJSON, list.Checkpoints, []string{"ID", "KIND", "FILES", "SIZE", "AGE", "MESSAGE"}, func(cp api.Checkpoint) []string {
		return []string{cp.ID, orDash(cp.Kind), strconv.Itoa(cp.Files), byteSize(cp.Bytes), formatAge(now, cp.CreatedAt), orDash(oneLine(cp.Message))}
	})
}

func appUndo(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app undo", "hutch app undo [--steps N | --to CHECKPOINT] [--json] APP\n\n"+
		"Brings back the dev sandbox's files as they were before the last task, N\n"+
		"checkpoints back, or as a checkpoint holds them. The files as they were before\n"+
		"the undo are kept as a checkpoint, so an undo can be undone.")
	steps := fs.Int("steps", 0, "go back `N` checkpoints (default 1)")
	to := fs.String("to", "", "go back to this `checkpoint` (hutch app checkpoints lists them)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	req, err := undoRequest(fs, pos, *steps, *to)
	if err != nil {
		return err
	}
	c, id, err := appClient(ctx, e, pos[0])
	if err != nil {
		return err
	}
	res, err := c.Undo(ctx, id, req)
	if err != nil {
		return err
	}
	if *asJSON {
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
		fmt.Fprintf(e.stderr, "hutch: to take the undo back: hutch app undo %s --to %s\n", pos[0], res.PreUndo.ID)
	}
	return nil
}

// undoRequest checks undo's command line: one app, and --steps or --to
// but not both.
func undoRequest(fs *flag.FlagSet, pos []string, steps int, to string) (api.UndoRequest, error) {
	switch {
	case len(pos) != 1:
		return api.UndoRequest{}, usagef(fs, "app undo takes one app (its id or name)")
	case steps < 0:
		return api.UndoRequest{}, usagef(fs, "--steps must not be negative")
	case steps > 0 && to != "":
		return api.UndoRequest{}, usagef(fs, "give --steps or --to, not both")
	}
	return api.UndoRequest{Steps: steps, Checkpoint: to}, nil
}
