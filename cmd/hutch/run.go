package main

import (
	"context"
	"fmt"
	"time"
)

// destroyTimeout bounds run's clean-up, which outlives Ctrl-C.
const destroyTimeout = 30 * time.Second

// runRun is `hutch run [flags] -- CMD…`: create a sandbox, stream the
// command, destroy the sandbox whatever happened, exit with the command's
// status.
func runRun(ctx context.Context, e *env, args []string) (retErr error) {
	fs := newFlags(e, "run", "hutch run [create and exec flags] -- CMD…")
	var cf createFlags
	cf.register(fs)
	var ef execFlags
	fs.StringVar(&ef.cwd, "workdir", "", "working `directory` of the command")
	fs.DurationVar(&ef.timeout, "exec-timeout", 0, "kill the command after this `duration` (0: no limit)")
	keep := fs.Bool("keep", false, "keep the sandbox instead of destroying it")
	cmd, err := parseArgs(fs, args, 0)
	if err != nil {
		return err
	}
	if len(cmd) == 0 {
		return usagef(fs, "run needs a command")
	}
	c, sb, err := cf.create(ctx, e, fs)
	if err != nil {
		return err
	}
	if *keep {
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
	return streamExec(ctx, e, c, sb.ID, cmd, ef)
}
