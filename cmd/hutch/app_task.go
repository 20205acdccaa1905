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

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// cancelTimeout bounds the cancel of a task after Ctrl-C.
const cancelTimeout = 10 * time.Second

// appTask is `hutch app task [flags] APP -- CMD…`: a task's log as it
// comes, then what it did; the exit status says whether it succeeded.
func appTask(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app task", "hutch app task [flags] APP -- CMD…\n\n"+
		"Runs CMD in the app's dev sandbox (in its app directory) and prints its log as it\n"+
		"comes: stdout to stdout; stderr and the task's own notes to stderr. Then it says\n"+
		"what changed and how the checks went, and exits 0 if the task succeeded, 1 if not.\n"+
		"Ctrl-C cancels the task.")
	timeoutS := fs.Int("timeout", 0, "cancel the task after this many `seconds` (0: the server's default, "+strconv.Itoa(api.DefaultTaskTimeout)+")")
	var message string
	fs.StringVar(&message, "message", "", "a `message` describing the task in the app's history")
	fs.StringVar(&message, "m", "", "same as --message")
	noFollow := fs.Bool("no-follow", false, "print the task's id and return at once")
	asJSON := fs.Bool("json", false, "print the task as JSON when it ends (the log goes to stderr)")
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef(fs, "app task needs an app and a command")
	}
	if *timeoutS < 0 {
		return usagef(fs, "--timeout must not be negative")
	}
	c, id, err := appClient(ctx, e, pos[0])
	if err != nil {
		return err
	}
	t, err := c.CreateTask(ctx, id, api.CreateTaskRequest{Command: pos[1:], TimeoutS: *timeoutS, Message: message})
	if err != nil {
		return err
	}
	if *noFollow {
		if *asJSON {
			return printJSON(e.stdout, t)
		}
		fmt.Fprintln(e.stdout, t.ID)
		return nil
	}
	stdout := e.stdout
	if *asJSON {
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
	if *asJSON {
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

func appTasks(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app tasks", "hutch app tasks [--limit N] [--json] APP")
	limit := fs.Int("limit", 0, "at most this many, newest first (0: the server's default)")
	asJSON := fs.Bool("json", false, "print the tasks as JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	list, err := c.Tasks(ctx, id, *limit)
	if err != nil {
		return err
	}
	now := time.Now()
	header := []string{"ID", "STATUS", "EXIT", "BUILD", "PREVIEW", "HEALTHY", "FILES", "AGE", "COMMAND"}
	return printList(e.stdout, *asJSON, list.Tasks, header, func(t api.Task) []string {
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
}

// appLogs is `hutch app logs APP PROCESS`: the lines of one process of
// the app's manifest, stdout to stdout and the rest to stderr.
func appLogs(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app logs", "hutch app logs [--role dev|live] [--tail N] [-f] [--json] APP PROCESS")
	role := fs.String("role", api.RoleDev, "whose process: `dev` or live")
	tail := fs.Int("tail", 0, "start with the last `N` lines (0: the server's default)")
	var follow bool
	fs.BoolVar(&follow, "f", false, "follow: print new lines as they come, until interrupted")
	fs.BoolVar(&follow, "follow", false, "same as -f")
	asJSON := fs.Bool("json", false, "print each line as the server sends it: JSON with time, stream and line")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(fs, "app logs takes an app and the name of one of its processes")
	}
	if *tail < 0 {
		return usagef(fs, "--tail must not be negative")
	}
	c, id, err := appClient(ctx, e, pos[0])
	if err != nil {
		return err
	}
	body, err := c.AppLogs(ctx, id, *role, pos[1], *tail, follow)
	if err != nil {
		return err
	}
	defer body.Close()
	if *asJSON {
		_, err = io.Copy(e.stdout, body)
		return err
	}
	return printAppLog(e, body)
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
