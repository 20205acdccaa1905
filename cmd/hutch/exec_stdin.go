package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// signalTimeout bounds ending an interrupted command.
const signalTimeout = 5 * time.Second

// execInteractive is `hutch exec -i`: cmd runs as a background process
// whose stdin is fed from ours as it comes, and whose output is copied
// until it exits; hutch exits with its status. --timeout kills it.
func execInteractive(ctx context.Context, e *env, c *client.Client, id string, cmd []string, ef execFlags) error {
	p, err := c.StartProcess(ctx, id, api.ProcessRequest{Cmd: cmd, Env: ef.env.m, Cwd: ef.cwd, Root: ef.root})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == "program_not_found" {
		report(e, apiErr.Code, apiErr.Message)
		return exitCode(127) // as exec without -i exits
	}
	if err != nil {
		return err
	}
	stdinErr := make(chan error, 1)
	go func() {
		_, err := c.WriteStdin(ctx, id, p.PID, e.stdin, true)
		stdinErr <- err
	}()
	if ef.timeout > 0 {
		t := time.AfterFunc(time.Duration(ef.timeout), func() {
			fmt.Fprintf(e.stderr, "hutch: the command timed out after %s\n", time.Duration(ef.timeout))
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signalTimeout)
			defer cancel()
			_, _ = c.SignalProcess(sctx, id, p.PID, "KILL", true)
		})
		defer t.Stop()
	}
	end, err := c.CopyOutput(ctx, id, p.PID, 0, e.stdout, e.stderr)
	if err != nil {
		if ctx.Err() != nil { // interrupted: the command goes too, as exec's does
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signalTimeout)
			defer cancel()
			_, _ = c.SignalProcess(sctx, id, p.PID, "TERM", true)
		}
		return err
	}
	select {
	case err := <-stdinErr:
		if err != nil && !client.IsConflict(err) {
			fmt.Fprintf(e.stderr, "hutch: stdin: %s\n", err)
		}
	default: // the command ended before its input did
	}
	if end.ExitCode == nil {
		return fmt.Errorf("process %d ended without an exit status", p.PID)
	}
	return exitWith(*end.ExitCode)
}
