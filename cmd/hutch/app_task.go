package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// cancelTimeout bounds the cancel of a task after Ctrl-C.
const cancelTimeout = 10 * time.Second

const appTaskLong = `Runs CMD in the app's dev sandbox (in its app directory) and prints its log as it
comes: stdout to stdout; stderr and the task's own notes to stderr. Then it says
what changed and how the checks went, and exits 0 if the task succeeded, 1 if not.
Ctrl-C cancels the task. With --json the task is printed as JSON when it ends
(the log then goes to stderr).`

// newAppTaskCmd is `hutch app task [flags] APP [--] CMD…`: a task's log as
// it comes, then what it did; the exit status says whether it succeeded.
func newAppTaskCmd(e *env) *cobra.Command {
	var (
		timeout  durationFlag
		message  string
		noFollow bool
	)
	cmd := &cobra.Command{
		Use:   "task [flags] APP [--] CMD…",
		Short: "Run a command in dev, follow its log, show what it did",
		Long:  appTaskLong,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pos, err := commandArgs(cmd, args, 1)
			if err != nil {
				return err
			}
			if len(pos) < 2 {
				return usagef("app task needs an app and a command")
			}
			ctx := cmd.Context()
			c, id, err := appClient(ctx, e, pos[0])
			if err != nil {
				return err
			}
			t, err := c.CreateTask(ctx, id, api.CreateTaskRequest{Command: pos[1:], TimeoutS: timeout.seconds(), Message: message})
			if err != nil {
				return err
			}
			if noFollow {
				return printResult(e, t, t.ID)
			}
			stdout := e.stdout
			if e.json {
				stdout = e.stderr
			}
			end, err := c.TaskLog(ctx, id, t.ID, 0, func(l client.TaskLogEntry) error {
				return writeTaskLog(stdout, e.stderr, l)
			})
			if err != nil {
				if ctx.Err() != nil {
					cancelTask(e, c, id, t.ID)
				}
				return err
			}
			if e.json {
				if err := printJSON(e.stdout, end); err != nil {
					return err
				}
			} else {
				printTaskSummary(e.stderr, &end, pos[0])
			}
			if end.Status != api.TaskSucceeded {
				return exitCode(1)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	fs.Var(&timeout, "timeout", "cancel the task after this long (0: the server's default, "+strconv.Itoa(api.DefaultTaskTimeout)+"s)")
	fs.StringVarP(&message, "message", "m", "", "a `message` describing the task in the app's history")
	fs.BoolVar(&noFollow, "no-follow", false, "print the task's id and return at once")
	return cmd
}

// cancelTask cancels a task the command was following when it was
// interrupted.
func cancelTask(e *env, c *client.Client, appID, taskID string) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	switch _, err := c.CancelTask(ctx, appID, taskID); {
	case err == nil:
		fmt.Fprintf(e.stderr, "hutch: task %s cancelled\n", taskID)
	case client.Code(err) != "task_done":
		fmt.Fprintf(e.stderr, "hutch: cancel task %s: %s\n", taskID, err)
	}
}

// writeTaskLog writes one chunk of a task's log: stdout to stdout, the
// rest to stderr, the task's own notes ("system") as hutch's lines.
func writeTaskLog(stdout, stderr io.Writer, l client.TaskLogEntry) error {
	var err error
	switch l.Stream {
	case client.TaskLogStdout:
		_, err = io.WriteString(stdout, l.Text)
	case client.TaskLogSystem:
		for line := range strings.Lines(l.Text) {
			if _, err = io.WriteString(stderr, "hutch: "+strings.TrimRight(line, "\n")+"\n"); err != nil {
				break
			}
		}
	default:
		_, err = io.WriteString(stderr, l.Text)
	}
	return err
}

// printTaskSummary says how a task ended: status, time and exit code,
// checks, files changed and how to take them back.
func printTaskSummary(w io.Writer, t *api.Task, app string) {
	head := fmt.Sprintf("hutch: task %s %s", t.ID, t.Status)
	if t.DurationMS > 0 {
		head += " in " + (time.Duration(t.DurationMS) * time.Millisecond).Round(time.Millisecond).String()
	}
	if t.ExitCode != nil {
		head += fmt.Sprintf(" (exit %d)", *t.ExitCode)
	}
	if t.Error != "" {
		head += ": " + oneLine(t.Error)
	}
	fmt.Fprintln(w, head)
	checks := []string{"build " + orDash(t.BuildStatus), "preview " + okWord(t.PreviewOK, "ok", "failing"),
		"app " + okWord(t.AppHealthy, "healthy", "unhealthy")}
	fmt.Fprintf(w, "hutch: %s\n", strings.Join(checks, ", "))
	switch n := len(t.FilesChanged); n {
	case 0:
		fmt.Fprintln(w, "hutch: no files changed")
	default:
		fmt.Fprintf(w, "hutch: %d %s changed:\n", n, plural(n, "file", "files"))
		printChanges(w, t.FilesChanged)
	}
	if t.Checkpoint != "" && len(t.FilesChanged) > 0 {
		fmt.Fprintf(w, "hutch: to take them back: hutch app undo %s --to %s\n", app, t.Checkpoint)
	}
}

// printChanges lists file changes, one a line: A added, M modified, D
// deleted.
func printChanges(w io.Writer, changes []api.FileChange) {
	for _, c := range changes {
		mark := c.Change
		switch c.Change {
		case "added":
			mark = "A"
		case "modified":
			mark = "M"
		case "deleted":
			mark = "D"
		}
		fmt.Fprintf(w, "  %s %s\n", mark, c.Path)
	}
}

func okWord(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func newAppTasksCmd(e *env) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "tasks [--limit N] APP",
		Short: "List an app's tasks",
		Args:  oneApp("tasks"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			list, err := c.Tasks(cmd.Context(), id, limit)
			if err != nil {
				return err
			}
			now := time.Now()
			header := []string{"ID", "STATUS", "EXIT", "BUILD", "PREVIEW", "HEALTHY", "FILES", "AGE", "COMMAND"}
			return printList(e.stdout, e.json, list.Tasks, header, func(t api.Task) []string {
				exit := "-"
				if t.ExitCode != nil {
					exit = strconv.Itoa(*t.ExitCode)
				}
				what := strings.Join(t.Command, " ")
				if t.Message != "" {
					what = t.Message
				}
				return []string{t.ID, t.Status, exit, orDash(t.BuildStatus), strconv.FormatBool(t.PreviewOK), strconv.FormatBool(t.AppHealthy),
					strconv.Itoa(len(t.FilesChanged)), formatAge(now, t.CreatedAt), oneLine(what)}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many, newest first (0: the server's default)")
	return cmd
}

// newAppLogsCmd is `hutch app logs APP PROCESS`: the lines of one process
// of the app's manifest, stdout to stdout and the rest to stderr; under
// --json each line as the server sends it.
func newAppLogsCmd(e *env) *cobra.Command {
	var (
		role   string
		tail   int
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs [--role dev|live] [--tail N] [-f] APP PROCESS",
		Short: "Print (-f: follow) a process's log",
		Args:  nArgs(2, 2, "app logs takes an app and the name of one of its processes"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 0 {
				return usagef("--tail must not be negative")
			}
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			body, err := c.AppLogs(cmd.Context(), id, role, args[1], tail, follow)
			if err != nil {
				return err
			}
			defer body.Close()
			if e.json {
				_, err = io.Copy(e.stdout, body)
				return err
			}
			return printAppLog(e, body)
		},
	}
	cmd.Flags().StringVar(&role, "role", api.RoleDev, "whose process: `dev` or live")
	cmd.Flags().IntVar(&tail, "tail", 0, "start with the last `N` lines (0: the server's default)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow: print new lines as they come, until interrupted")
	return cmd
}

// printAppLog writes each NDJSON line of an app process's log.
func printAppLog(e *env, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l client.AppLogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("a log line that is not JSON: %w", err)
		}
		switch l.Stream {
		case "stdout":
			fmt.Fprintln(e.stdout, l.Line)
		case "stderr":
			fmt.Fprintln(e.stderr, l.Line)
		default:
			fmt.Fprintf(e.stderr, "[%s] %s\n", l.Stream, l.Line)
		}
	}
	return sc.Err()
}
