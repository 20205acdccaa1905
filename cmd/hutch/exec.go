package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// maxStdin bounds what exec reads from a non-terminal stdin.
const maxStdin = 16 << 20

// execFlags are the flags of exec, shared with run.
type execFlags struct {
	env     kvFlag
	cwd     string
	timeout time.Duration
}

// register adds the exec flags to fs.
func (f *execFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.env, "env", "environment variable `K=V` of the command (repeatable)")
	fs.StringVar(&f.cwd, "cwd", "", "working `directory` of the command")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill the command after this `duration` (0: no limit)")
}

// runExec is `hutch exec [flags] ID -- CMD…`.
func runExec(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "exec", "hutch exec [flags] ID -- CMD…")
	var ef execFlags
	ef.register(fs)
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef(fs, "exec needs a sandbox id and a command")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	return streamExec(ctx, e, c, pos[0], pos[1:], ef)
}

// streamExec runs cmd in sandbox id, copying its output as it comes, and
// returns the remote exit status as an exitCode.
func streamExec(ctx context.Context, e *env, c *client.Client, id string, cmd []string, ef execFlags) error {
	req := api.ExecRequest{Cmd: cmd, Env: ef.env.m, Cwd: ef.cwd, TimeoutMS: int(ef.timeout / time.Millisecond)}
	if !e.stdinTTY && e.stdin != nil {
		b, err := io.ReadAll(io.LimitReader(e.stdin, maxStdin+1))
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if len(b) > maxStdin {
			return fmt.Errorf("stdin is over %d MiB; copy large input with 'hutch cp' instead", maxStdin>>20)
		}
		req.Stdin = string(b)
	}
	st, err := c.ExecStream(ctx, id, req)
	if err != nil {
		return err
	}
	res, err := st.Copy(e.stdout, e.stderr)
	if err != nil {
		return err
	}
	if res == nil {
		return fmt.Errorf("the stream ended before the command's exit status arrived")
	}
	if res.Error != "" {
		fmt.Fprintf(e.stderr, "hutch: %s\n", res.Error)
	}
	if res.TimedOut {
		fmt.Fprintf(e.stderr, "hutch: the command timed out after %s\n", ef.timeout)
	}
	if res.ExitCode != 0 {
		return exitCode(res.ExitCode)
	}
	return nil
}
