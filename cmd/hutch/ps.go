package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newPsCmd is `hutch ps ID`: a sandbox's processes.
func newPsCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "ps ID",
		Short:             "List a sandbox's processes",
		Args:              nArgs(1, 1, "ps needs a sandbox id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			l, err := c.ListProcesses(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, l)
			}
			tw := newTable(e.stdout)
			row(tw, "PID", "STATUS", "STARTED", "TAG", "COMMAND")
			for _, p := range l.Processes {
				row(tw, strconv.Itoa(p.PID), processStatus(p), p.StartedAt.Local().Format(time.DateTime), p.Tag, strings.Join(p.Cmd, " "))
			}
			return tw.Flush()
		},
	}
}

// processStatus is "running", "exited 3" or "killed SIGTERM".
func processStatus(p api.Process) string {
	switch {
	case p.Running:
		return "running"
	case p.Signal != "":
		return "killed " + p.Signal
	case p.ExitCode != nil:
		return "exited " + strconv.Itoa(*p.ExitCode)
	}
	return "exited"
}

// newLogsCmd is `hutch logs [-f] [--from N] ID PID`: a process's output.
// Under --json each piece of output is one line of the API's output
// event.
func newLogsCmd(e *env) *cobra.Command {
	var (
		follow bool
		from   int64
	)
	cmd := &cobra.Command{
		Use:               "logs [-f] [--from N] ID PID",
		Short:             "Print (or follow) a process's output",
		Args:              nArgs(2, 2, "logs needs a sandbox id and a process id"),
		ValidArgsFunction: completeProcesses(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[1])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx, id := cmd.Context(), args[0]
			if follow && !e.json {
				p, err := c.CopyOutput(ctx, id, pid, from, e.stdout, e.stderr)
				if err != nil {
					return err
				}
				return exitWith(*p.ExitCode)
			}
			st, err := c.ProcessOutput(ctx, id, pid, from, follow)
			if err != nil {
				return err
			}
			defer st.Close()
			for {
				ev, err := st.Next()
				if err != nil {
					return nil // the end of what there is
				}
				if e.json {
					if err := printJSONLine(e.stdout, ev); err != nil {
						return err
					}
					continue
				}
				switch ev.Type {
				case api.OutputStdout:
					e.stdout.Write(ev.Data)
				case api.OutputStderr:
					e.stderr.Write(ev.Data)
				case api.OutputDropped:
					fmt.Fprintf(e.stderr, "[hutch: %d bytes of output were dropped before they were read]\n", ev.Dropped)
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow: go on as output arrives, until the process exits (and exit with its status)")
	cmd.Flags().Int64Var(&from, "from", 0, "start at this byte `offset` of the output")
	return cmd
}

// newKillCmd is `hutch kill [-s SIGNAL] [--group] ID PID`.
func newKillCmd(e *env) *cobra.Command {
	var (
		sig   string
		group bool
	)
	cmd := &cobra.Command{
		Use:               "kill [-s SIGNAL] [--group] ID PID",
		Short:             "Signal a process",
		Args:              nArgs(2, 2, "kill needs a sandbox id and a process id"),
		ValidArgsFunction: completeProcesses(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := parsePID(args[1])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			p, err := c.SignalProcess(cmd.Context(), args[0], pid, sig, group)
			if err == nil && e.json {
				return printJSON(e.stdout, p)
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&sig, "signal", "s", "TERM", "the `signal`: TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT or WINCH")
	cmd.Flags().BoolVar(&group, "group", false, "signal the process's whole process group")
	return cmd
}

// newStartCmd is `hutch start [flags] ID [--] CMD…`: a background process.
func newStartCmd(e *env) *cobra.Command {
	var (
		env      kvFlag
		cwd, tag string
		root     bool
	)
	cmd := &cobra.Command{
		Use:               "start [flags] ID [--] CMD…",
		Short:             "Start a background process and print its pid",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			pos, err := commandArgs(cmd, args, 1)
			if err != nil {
				return err
			}
			if len(pos) < 2 {
				return usagef("start needs a sandbox id and a command")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			p, err := c.StartProcess(cmd.Context(), pos[0], api.ProcessRequest{Cmd: pos[1:], Env: env.m, Cwd: cwd, Tag: tag, Root: root})
			if err != nil {
				return err
			}
			return printResult(e, p, p.PID)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().Var(&env, "env", "environment variable of the command (repeatable)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "working `directory` of the command")
	cmd.Flags().StringVar(&tag, "tag", "", "a `label` for the process")
	cmd.Flags().BoolVar(&root, "root", false, "run the process as root inside the sandbox")
	return cmd
}

// parsePID reads a process id argument.
func parsePID(s string) (int, error) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, usagef("%q is not a process id", s)
	}
	return pid, nil
}
