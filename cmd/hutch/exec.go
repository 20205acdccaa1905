package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// maxStdin bounds what exec reads from stdin before the command starts.
const maxStdin = 16 << 20

// execFlags are the flags of exec, shared with run.
type execFlags struct {
	env     kvFlag
	cwd     string
	timeout durationFlag
	root    bool
}

// register adds the working directory and timeout flags to fs, named as
// exec or run name them; exec adds --env (run's sets the sandbox's).
func (f *execFlags) register(fs *pflag.FlagSet, cwdName, timeoutName string) {
	fs.StringVar(&f.cwd, cwdName, "", "working `directory` of the command")
	fs.Var(&f.timeout, timeoutName, "kill the command after this long (0: no limit)")
}

const execLong = `Runs CMD in the sandbox and streams its output as it comes; hutch exits with
the command's exit status.

Stdin: when it is not a terminal, all of it (up to 16 MiB) is sent when the
command starts. -i streams it instead, as it comes and without a limit, and
reads a terminal too (end it with Ctrl-D). -t runs the command on a terminal
(raw mode, window resizes, one output stream), as hutch shell does.

With --json, hutch waits for the command and prints the API's exec result:
exit code, stdout and stderr (as text, or base64 when not UTF-8).`

// newExecCmd is `hutch exec [flags] ID [--] CMD…`.
func newExecCmd(e *env) *cobra.Command {
	var (
		ef          execFlags
		interactive bool
		tty         bool
	)
	cmd := &cobra.Command{
		Use:               "exec [flags] ID [--] CMD…",
		Short:             "Run a command in a sandbox, streaming its output",
		Long:              execLong,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			pos, err := commandArgs(cmd, args, 1)
			if err != nil {
				return err
			}
			if len(pos) < 2 {
				return usagef("exec needs a sandbox id and a command")
			}
			if tty && (e.json || len(ef.env.m) > 0 || ef.timeout != 0 || ef.root) {
				return usagef("exec -t takes neither --json, --env, --timeout nor --root")
			}
			if interactive && e.json {
				return usagef("exec -i does not take --json")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx, id, argv := cmd.Context(), pos[0], pos[1:]
			switch {
			case tty:
				return openTerminal(ctx, e, c, id, client.TerminalOptions{Cmd: argv, Cwd: ef.cwd})
			case interactive:
				return execInteractive(ctx, e, c, id, argv, ef)
			}
			return streamExec(ctx, e, c, id, argv, ef)
		},
	}
	cmd.Flags().SetInterspersed(false)
	ef.register(cmd.Flags(), "cwd", "timeout")
	cmd.Flags().Var(&ef.env, "env", "environment variable of the command (repeatable)")
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "stream stdin to the command as it comes")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run the command on a terminal")
	cmd.Flags().BoolVar(&ef.root, "root", false, "run the command as root inside the sandbox")
	return cmd
}

// execRequest is the request for cmd, with stdin unless it is a terminal.
func execRequest(e *env, cmd []string, ef execFlags) (api.ExecRequest, error) {
	req := api.ExecRequest{Cmd: cmd, Env: ef.env.m, Cwd: ef.cwd, TimeoutMS: int(time.Duration(ef.timeout) / time.Millisecond), Root: ef.root}
	if e.stdinTTY || e.stdin == nil {
		return req, nil
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, maxStdin+1))
	if err != nil {
		return req, local(fmt.Errorf("read stdin: %w", err))
	}
	if len(b) > maxStdin {
		return req, fmt.Errorf("stdin is over %d MiB; stream it with exec -i, or copy it with 'hutch cp'", maxStdin>>20)
	}
	req.Stdin = string(b)
	return req, nil
}

// streamExec runs cmd in sandbox id, copying its output as it comes (or,
// under --json, printing the result at the end), and returns the remote
// exit status as an exitCode.
func streamExec(ctx context.Context, e *env, c *client.Client, id string, cmd []string, ef execFlags) error {
	req, err := execRequest(e, cmd, ef)
	if err != nil {
		return err
	}
	if e.json {
		res, err := c.Exec(ctx, id, req)
		if err != nil {
			return err
		}
		if err := printJSON(e.stdout, res); err != nil {
			return err
		}
		return exitWith(res.ExitCode)
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
		report(e, codeError, res.Error)
	}
	if res.TimedOut {
		fmt.Fprintf(e.stderr, "hutch: the command timed out after %s\n", time.Duration(ef.timeout))
	}
	return exitWith(res.ExitCode)
}
