package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hutchdev/hutch/api"
)

// runPs is `hutch ps [--json] ID`: a sandbox's processes.
func runPs(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "ps", "hutch ps [--json] ID")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "ps needs a sandbox id")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	l, err := c.ListProcesses(ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, l)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tSTATUS\tSTARTED\tTAG\tCOMMAND")
	for _, p := range l.Processes {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", p.PID, processStatus(p), p.StartedAt.Local().Format(time.DateTime), p.Tag, strings.Join(p.Cmd, " "))
	}
	return tw.Flush()
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

// runLogs is `hutch logs [-f] [--from N] ID PID`: a process's output.
func runLogs(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "logs", "hutch logs [-f] [--from N] ID PID")
	follow := fs.Bool("f", false, "follow: go on as output arrives, until the process exits (and exit with its status)")
	from := fs.Int64("from", 0, "start at this byte `offset` of the output")
	id, pid, err := sandboxAndPID(fs, args, "logs")
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if *follow {
		p, err := c.CopyOutput(ctx, id, pid, *from, e.stdout, e.stderr)
		if err != nil {
			return err
		}
		return exitCode(*p.ExitCode)
	}
	st, err := c.ProcessOutput(ctx, id, pid, *from, false)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			return nil // the end of what there is
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
}

// runKill is `hutch kill [-s SIGNAL] [--group] ID PID`.
func runKill(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "kill", "hutch kill [-s SIGNAL] [--group] ID PID")
	sig := fs.String("s", "TERM", "the `signal`: TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT or WINCH")
	group := fs.Bool("group", false, "signal the process's whole process group")
	id, pid, err := sandboxAndPID(fs, args, "kill")
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	_, err = c.SignalProcess(ctx, id, pid, *sig, *group)
	return err
}

// runStart is `hutch start [flags] ID -- CMD…`: a background process.
func runStart(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "start", "hutch start [flags] ID -- CMD…")
	var env kvFlag
	fs.Var(&env, "env", "environment variable `K=V` of the command (repeatable)")
	cwd := fs.String("cwd", "", "working `directory` of the command")
	tag := fs.String("tag", "", "a `label` for the process")
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef(fs, "start needs a sandbox id and a command")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	p, err := c.StartProcess(ctx, pos[0], api.ProcessRequest{Cmd: pos[1:], Env: env.m, Cwd: *cwd, Tag: *tag})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, p.PID)
	return nil
}

// sandboxAndPID parses the ID PID arguments of a process command.
func sandboxAndPID(fs *flag.FlagSet, args []string, name string) (string, int, error) {
	pos, err := parseArgs(fs, args, 2)
	if err != nil {
		return "", 0, err
	}
	if len(pos) != 2 {
		return "", 0, usagef(fs, "%s needs a sandbox id and a process id", name)
	}
	pid, err := strconv.Atoi(pos[1])
	if err != nil || pid <= 0 {
		return "", 0, usagef(fs, "%q is not a process id", pos[1])
	}
	return pos[0], pid, nil
}
