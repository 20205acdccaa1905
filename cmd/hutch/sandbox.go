package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

const sandboxUsage = "hutch sandbox create|ls|get|rm|stop|start|pause|resume|extend|keepalive …"

// runSandbox is `hutch sandbox <verb>`.
func runSandbox(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "usage: %s\n", sandboxUsage)
		return errUsageShown
	}
	verbs := map[string]command{
		"create":    sandboxCreate,
		"ls":        sandboxList,
		"list":      sandboxList,
		"get":       sandboxGet,
		"rm":        sandboxRemove,
		"stop":      sandboxStop,
		"start":     sandboxStart,
		"pause":     sandboxPause,
		"resume":    sandboxResume,
		"extend":    sandboxExtend,
		"keepalive": sandboxKeepalive,
	}
	verb, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "hutch: unknown sandbox command %q\nusage: %s\n", args[0], sandboxUsage)
		return errUsageShown
	}
	return verb(ctx, e, args[1:])
}

func sandboxCreate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "sandbox create", "hutch sandbox create [flags]")
	var cf createFlags
	cf.register(fs)
	asJSON := fs.Bool("json", false, "print the sandbox as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "sandbox create takes no arguments")
	}
	_, sb, err := cf.create(ctx, e, fs)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, sb)
	}
	fmt.Fprintln(e.stdout, sb.ID)
	return nil
}

func sandboxList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "sandbox ls", "hutch sandbox ls [--state S] [--label k=v]… [--json]")
	state := fs.String("state", "", "only sandboxes in this `state` (creating, running, stopped, failed, destroyed)")
	var labels kvFlag
	fs.Var(&labels, "label", "only sandboxes with label `k=v` (repeatable)")
	all := fs.Bool("a", false, "include destroyed sandboxes")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "sandbox ls takes no arguments")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var list []api.Sandbox
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{State: api.SandboxState(*state), Labels: labels.m}) {
		if err != nil {
			return err
		}
		if sb.State == api.StateDestroyed && !*all && *state == "" {
			continue
		}
		list = append(list, sb)
	}
	if *asJSON {
		if list == nil {
			list = []api.Sandbox{}
		}
		return printJSON(e.stdout, list)
	}
	tw := newTable(e.stdout)
	row(tw, "ID", "STATE", "TEMPLATE", "DRIVER", "AGE", "LABELS")
	now := time.Now()
	for _, sb := range list {
		row(tw, sb.ID, string(sb.State), sb.Template, sb.Driver, formatAge(now, sb.CreatedAt), formatLabels(sb.Labels))
	}
	return tw.Flush()
}

func sandboxGet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "sandbox get", "hutch sandbox get [--json] ID")
	asJSON := fs.Bool("json", false, "print the sandbox as JSON")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(fs, "sandbox get takes one sandbox id")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	sb, err := c.GetSandbox(ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, sb)
	}
	now := time.Now()
	tw := newTable(e.stdout)
	row(tw, "id:", sb.ID)
	row(tw, "state:", string(sb.State))
	row(tw, "template:", sb.Template)
	row(tw, "driver:", sb.Driver+" ("+sb.Isolation+" isolation)")
	row(tw, "cwd:", sb.Cwd)
	row(tw, "limits:", formatLimits(sb.Limits))
	row(tw, "labels:", formatLabels(sb.Labels))
	row(tw, "created:", formatTime(now, &sb.CreatedAt))
	row(tw, "expires:", formatTime(now, sb.ExpiresAt))
	if sb.Error != "" {
		row(tw, "error:", sb.Error)
	}
	for _, d := range sb.Degraded {
		row(tw, "degraded:", d)
	}
	return tw.Flush()
}

// eachSandbox applies fn to every id in args, reporting each failure and
// failing when any did.
func eachSandbox(ctx context.Context, e *env, args []string, name string, fn func(*client.Client, string) error) error {
	fs := newFlags(e, "sandbox "+name, "hutch sandbox "+name+" ID…")
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(fs, "sandbox %s takes one or more sandbox ids", name)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var failed []string
	for _, id := range pos {
		if err := fn(c, id); err != nil {
			fmt.Fprintf(e.stderr, "hutch: %s: %s\n", id, err)
			failed = append(failed, id)
			continue
		}
		fmt.Fprintln(e.stdout, id)
	}
	if len(failed) > 0 {
		return fmt.Errorf("sandbox %s failed for %s", name, strings.Join(failed, ", "))
	}
	return nil
}

func sandboxRemove(ctx context.Context, e *env, args []string) error {
	return eachSandbox(ctx, e, args, "rm", func(c *client.Client, id string) error { return c.DeleteSandbox(ctx, id) })
}

func sandboxStop(ctx context.Context, e *env, args []string) error {
	return eachSandbox(ctx, e, args, "stop", func(c *client.Client, id string) error {
		_, err := c.StopSandbox(ctx, id)
		return err
	})
}

func sandboxStart(ctx context.Context, e *env, args []string) error {
	return eachSandbox(ctx, e, args, "start", func(c *client.Client, id string) error {
		_, err := c.StartSandbox(ctx, id)
		return err
	})
}

func sandboxPause(ctx context.Context, e *env, args []string) error {
	return eachSandbox(ctx, e, args, "pause", func(c *client.Client, id string) error {
		_, err := c.PauseSandbox(ctx, id)
		return err
	})
}

func sandboxResume(ctx context.Context, e *env, args []string) error {
	return eachSandbox(ctx, e, args, "resume", func(c *client.Client, id string) error {
		_, err := c.ResumeSandbox(ctx, id)
		return err
	})
}

func sandboxKeepalive(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "sandbox keepalive", "hutch sandbox keepalive ID DURATION\n\n"+
		"Keeps the idle action (pause, stop or destroy) off the sandbox for DURATION\n"+
		"(90s, 30m, 2h) from now; 0 ends a keepalive. Its timeout still runs.")
	id, d, err := idAndDuration(fs, args, 0)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	sb, err := c.Keepalive(ctx, id, int(d.Round(time.Second)/time.Second))
	if err != nil {
		return err
	}
	if sb.KeepaliveUntil != nil {
		fmt.Fprintf(e.stdout, "%s kept alive until %s\n", sb.ID, sb.KeepaliveUntil.Local().Format(time.RFC3339))
	} else {
		fmt.Fprintf(e.stdout, "%s has no keepalive\n", sb.ID)
	}
	return nil
}

// idAndDuration reads the ID DURATION arguments of fs, a duration of at
// least least.
func idAndDuration(fs *flag.FlagSet, args []string, least time.Duration) (string, time.Duration, error) {
	pos, err := parseArgs(fs, args, -1)
	if err != nil {
		return "", 0, err
	}
	if len(pos) != 2 {
		return "", 0, usagef(fs, "%s takes a sandbox id and a duration", fs.Name())
	}
	d, err := time.ParseDuration(pos[1])
	if pos[1] == "0" {
		d, err = 0, nil
	}
	if err != nil || d < least {
		return "", 0, usagef(fs, "duration %q: give one of %s or more, such as 90s, 30m or 2h", pos[1], least)
	}
	return pos[0], d, nil
}

func sandboxExtend(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "sandbox extend", "hutch sandbox extend ID DURATION\n\n"+
		"Gives the sandbox a lifetime of DURATION (90s, 30m, 2h) from now, or from its next\n"+
		"start when it is stopped (a stopped sandbox's clock does not run).")
	id, d, err := idAndDuration(fs, args, time.Second)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	sb, err := c.SetTimeout(ctx, id, int(d.Round(time.Second)/time.Second))
	if err != nil {
		return err
	}
	if sb.ExpiresAt != nil {
		fmt.Fprintf(e.stdout, "%s expires at %s\n", sb.ID, sb.ExpiresAt.Local().Format(time.RFC3339))
	} else {
		fmt.Fprintf(e.stdout, "%s has %ds from its next start\n", sb.ID, sb.TimeoutS)
	}
	return nil
}
