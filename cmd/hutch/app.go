package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/ids"
)

const appUsage = `usage: hutch app <command> [flags] [args]

Wherever a command takes APP, an app's id or its name will do.

commands:
  create NAME --preset P     make an app (--public, --template T, --wait)
  presets                    list the server's presets
  ls                         list apps
  get APP                    show an app
  rm APP…                    delete apps, their sandboxes and history
  task APP -- CMD…           run a command in dev, follow its log, show what it did
  tasks APP                  list an app's tasks
  logs APP PROCESS           print (-f: follow) a process's log (--role dev|live)
  ps APP                     list the processes of dev (--role live: of live)
  checkpoint APP [-m MSG]    save dev's files as they are
  checkpoints APP            list an app's checkpoints
  undo APP                   bring back dev's files before the last task (--steps N, --to CHECKPOINT)
  promote APP                make what dev runs live, once its checks pass
  rollback APP               point live back at what it was before the last promotion
  config APP                 list an app's config
  config set APP KEY=VALUE   set a config value (--sensitive, --access); KEY alone reads stdin
  config rm APP KEY…         delete config keys
  events [-f] APP            print (-f: follow) an app's events

Run 'hutch app <command> -h' for a command's flags.
`

// runApp is `hutch app <verb>`: apps, the layer above sandboxes.
func runApp(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, appUsage)
		return errUsageShown
	}
	verbs := map[string]command{
		"create":      appCreate,
		"presets":     appPresets,
		"ls":          appList,
		"list":        appList,
		"get":         appGet,
		"rm":          appRemove,
		"task":        appTask,
		"tasks":       appTasks,
		"logs":        appLogs,
		"ps":          appPs,
		"checkpoint":  appCheckpoint,
		"checkpoints": appCheckpoints,
		"undo":        appUndo,
		"promote":     appPromote,
		"rollback":    appRollback,
		"config":      appConfig,
		"events":      appEvents,
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, appUsage)
		return nil
	}
	verb, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "hutch: unknown app command %q\n\n%s", args[0], appUsage)
		return errUsageShown
	}
	return verb(ctx, e, args[1:])
}

// appID resolves an app given by id or by name to its id. An id is used
// as it is, without a request: no name can be one (a name starts with a
// letter, an id with a digit).
func appID(ctx context.Context, c *client.Client, ref string) (string, error) {
	if ids.Valid(ref) {
		return ref, nil
	}
	a, err := appByName(ctx, c, ref)
	if err != nil {
		return "", err
	}
	return a.ID, nil
}

// findApp returns an app given by id or by name.
func findApp(ctx context.Context, c *client.Client, ref string) (*api.App, error) {
	if ids.Valid(ref) {
		return c.App(ctx, ref)
	}
	return appByName(ctx, c, ref)
}

// appByName finds one of the caller's apps by name in the list of them;
// none is an app_not_found error as the server would answer it.
func appByName(ctx context.Context, c *client.Client, name string) (*api.App, error) {
	list, err := c.Apps(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list.Apps {
		if list.Apps[i].Name == name {
			return &list.Apps[i], nil
		}
	}
	return nil, &client.Error{StatusCode: http.StatusNotFound, Code: "app_not_found",
		Message: fmt.Sprintf("no app has the id or name %q (hutch app ls lists them)", name)}
}

// oneApp parses the flags of a command that takes one app and resolves
// it: the client and the app's id.
func oneApp(ctx context.Context, e *env, fs *flag.FlagSet, args []string) (*client.Client, string, error) {
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return nil, "", err
	}
	if len(pos) != 1 {
		return nil, "", usagef(fs, "%s takes one app (its id or name)", fs.Name())
	}
	return appClient(ctx, e, pos[0])
}

// appClient is the API's client and the id of the app ref names (its id
// or name).
func appClient(ctx context.Context, e *env, ref string) (*client.Client, string, error) {
	c, err := e.client()
	if err != nil {
		return nil, "", err
	}
	id, err := appID(ctx, c, ref)
	return c, id, err
}

func appCreate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app create", "hutch app create NAME --preset P [--public] [--template T] [--wait] [--json]\n\n"+
		"Makes the app NAME, answering at NAME.<apps domain> (live) and its /dev/ route (dev):\n"+
		"two sandboxes set up from the preset (hutch app presets lists them). Prints its id;\n"+
		"--wait waits until it is ready.")
	preset := fs.String("preset", "", "the `preset`: the app's starting files and processes (required)")
	template := fs.String("template", "", "template `name` to use instead of the preset's image")
	public := fs.Bool("public", false, "serve the app to everyone, not only to the tenant's keys and sessions")
	wait := fs.Bool("wait", false, "wait until the app is ready or failed")
	asJSON := fs.Bool("json", false, "print the app as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "app create takes one name")
	}
	if *preset == "" {
		return usagef(fs, "app create needs --preset (hutch app presets lists them)")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	a, err := c.CreateApp(ctx, api.CreateAppRequest{Name: pos[0], Preset: *preset, Template: *template, Public: *public})
	if err != nil {
		return err
	}
	if *wait {
		if a, err = c.WaitApp(ctx, a.ID); err != nil {
			return err
		}
	}
	if *asJSON {
		err = printJSON(e.stdout, a)
	} else {
		fmt.Fprintln(e.stdout, a.ID)
	}
	if err == nil && a.State == api.AppFailed {
		return fmt.Errorf("app %s failed: %s", a.Name, orDash(a.Error))
	}
	if err == nil && !*asJSON {
		fmt.Fprintf(e.stderr, "hutch: app %s %s: %s (dev: %s)\n", a.Name, a.State, a.URL, a.DevURL)
	}
	return err
}

func appPresets(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app presets", "hutch app presets [--json]")
	asJSON := fs.Bool("json", false, "print the presets as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "app presets takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	presets, err := c.Presets(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if presets == nil {
			presets = []api.Preset{}
		}
		return printJSON(e.stdout, presets)
	}
	tw := newTable(e.stdout)
	row(tw, "NAME", "TEMPLATE", "DESCRIPTION")
	for _, p := range presets {
		row(tw, p.Name, orDash(p.Template), orDash(p.Description))
	}
	return tw.Flush()
}

func appList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app ls", "hutch app ls [--json]")
	asJSON := fs.Bool("json", false, "print the apps as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "app ls takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	list, err := c.Apps(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if list.Apps == nil {
			list.Apps = []api.App{}
		}
		return printJSON(e.stdout, list.Apps)
	}
	now := time.Now()
	tw := newTable(e.stdout)
	row(tw, "NAME", "ID", "STATE", "PRESET", "PUBLIC", "AGE", "URL")
	for _, a := range list.Apps {
		row(tw, a.Name, a.ID, a.State, a.Preset, strconv.FormatBool(a.Public), formatAge(now, a.CreatedAt), a.URL)
	}
	return tw.Flush()
}

func appGet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app get", "hutch app get [--json] APP")
	asJSON := fs.Bool("json", false, "print the app as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "app get takes one app (its id or name)")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	a, err := findApp(ctx, c, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, a)
	}
	now := time.Now()
	tw := newTable(e.stdout)
	row(tw, "id:", a.ID)
	row(tw, "name:", a.Name)
	row(tw, "state:", a.State)
	if a.Error != "" {
		row(tw, "error:", a.Error)
	}
	row(tw, "preset:", a.Preset)
	row(tw, "template:", orDash(a.Template))
	row(tw, "public:", strconv.FormatBool(a.Public))
	row(tw, "url:", a.URL)
	row(tw, "dev url:", a.DevURL)
	row(tw, "live:", orDash(a.Live))
	row(tw, "dev:", orDash(a.Dev))
	row(tw, "previous live:", orDash(a.PreviousLive))
	row(tw, "created:", formatTime(now, &a.CreatedAt))
	row(tw, "updated:", formatTime(now, &a.UpdatedAt))
	return tw.Flush()
}

func appRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app rm", "hutch app rm APP…\n\nDeletes each app: its sandboxes, config, tasks and history.")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(fs, "app rm takes one or more apps (ids or names)")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var failed []string
	for _, ref := range pos {
		id, err := appID(ctx, c, ref)
		if err == nil {
			err = c.DeleteApp(ctx, id)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "hutch: %s: %s\n", ref, err)
			failed = append(failed, ref)
			continue
		}
		fmt.Fprintln(e.stdout, ref)
	}
	if len(failed) > 0 {
		return fmt.Errorf("app rm failed for %s", strings.Join(failed, ", "))
	}
	return nil
}

func appPromote(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app promote", "hutch app promote [--json] APP\n\n"+
		"Checks dev, copies it, checks the copy as live, snapshots live, then points live at\n"+
		"the copy. A failed check leaves live as it was. The old live stays for rollback.")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	res, err := c.Promote(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, res)
	}
	tw := newTable(e.stdout)
	for _, ch := range res.Checks {
		ok := "ok"
		if !ch.OK {
			ok = "FAILED"
		}
		row(tw, ok, ch.Name, ch.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "hutch: app %s promoted: live is %s at %s", res.App.Name, res.App.Live, res.App.URL)
	if res.Snapshot != "" {
		fmt.Fprintf(e.stderr, " (the old live was snapshotted as %s)", res.Snapshot)
	}
	fmt.Fprintln(e.stderr)
	return nil
}

func appRollback(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app rollback", "hutch app rollback [--json] APP\n\n"+
		"Points live back at the sandbox it was before the last promotion; a second\n"+
		"rollback undoes the first.")
	asJSON := fs.Bool("json", false, "print the app as JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	a, err := c.Rollback(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, a)
	}
	fmt.Fprintln(e.stdout, a.Live)
	fmt.Fprintf(e.stderr, "hutch: app %s rolled back: live is %s again (previous live %s)\n", a.Name, a.Live, orDash(a.PreviousLive))
	return nil
}

func appPs(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "app ps", "hutch app ps [--role dev|live] [--json] APP")
	role := fs.String("role", api.RoleDev, "whose processes: `dev` or live")
	asJSON := fs.Bool("json", false, "print the processes as JSON")
	c, id, err := oneApp(ctx, e, fs, args)
	if err != nil {
		return err
	}
	ps, err := c.AppProcesses(ctx, id, *role)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, ps)
	}
	if ps.ManifestError != "" {
		fmt.Fprintf(e.stderr, "hutch: the manifest is invalid, the last good one runs: %s\n", ps.ManifestError)
	}
	now := time.Now()
	tw := newTable(e.stdout)
	row(tw, "NAME", "STATE", "PID", "RESTARTS", "LAST EXIT", "UP", "COMMAND")
	for _, p := range ps.Processes {
		pid, exit, up := "-", "-", "-"
		if p.Pid != 0 {
			pid = strconv.Itoa(p.Pid)
		}
		if p.LastExitCode != nil {
			exit = strconv.Itoa(*p.LastExitCode)
		}
		if p.StartedAt != nil {
			up = formatAge(now, *p.StartedAt)
		}
		name := p.Name
		if p.Web {
			name += " (web)"
		}
		row(tw, name, p.State, pid, strconv.Itoa(p.Restarts), exit, up, oneLine(p.Command))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range ps.Processes {
		if p.Message != "" {
			fmt.Fprintf(e.stderr, "hutch: %s: %s\n", p.Name, oneLine(p.Message))
		}
	}
	return nil
}
