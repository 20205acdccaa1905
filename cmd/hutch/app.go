package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
	"github.com/hutchdev/hutch/internal/base/ids"
)

// newAppCmd is `hutch app`: apps, the layer above sandboxes.
func newAppCmd(e *env) *cobra.Command {
	return newGroup("app", "Apps: a live and a dev sandbox behind one name",
		"Apps: a live and a dev sandbox behind one name. Wherever a command takes APP,\nan app's id or its name will do.",
		newAppCreateCmd(e),
		newAppPresetsCmd(e),
		newAppListCmd(e),
		newAppGetCmd(e),
		newAppRemoveCmd(e),
		newAppTaskCmd(e),
		newAppTasksCmd(e),
		newAppLogsCmd(e),
		newAppPsCmd(e),
		newAppCheckpointCmd(e),
		newAppCheckpointsCmd(e),
		newAppUndoCmd(e),
		newAppPromoteCmd(e),
		newAppRollbackCmd(e),
		newAppConfigCmd(e),
		newAppEventsCmd(e),
	)
}

// oneApp is the argument check of a command that takes one app.
func oneApp(name string) cobra.PositionalArgs {
	return nArgs(1, 1, "app "+name+" takes one app (its id or name)")
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

func newAppCreateCmd(e *env) *cobra.Command {
	var (
		preset, template string
		public, wait     bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME --preset P [--public] [--template T] [--wait]",
		Short: "Make an app",
		Long: "Makes the app NAME, answering at NAME.<apps domain> (live) and its /dev/ route (dev):\n" +
			"two sandboxes set up from the preset (hutch app presets lists them). Prints its id;\n" +
			"--wait waits until it is ready.",
		Args: nArgs(1, 1, "app create takes one name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if preset == "" {
				return usagef("app create needs --preset (hutch app presets lists them)")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.CreateApp(ctx, api.CreateAppRequest{Name: args[0], Preset: preset, Template: template, Public: public})
			if err != nil {
				return err
			}
			if wait {
				if a, err = c.WaitApp(ctx, a.ID); err != nil {
					return err
				}
			}
			if e.json {
				err = printJSON(e.stdout, a)
			} else {
				fmt.Fprintln(e.stdout, a.ID)
			}
			if err == nil && a.State == api.AppFailed {
				return fmt.Errorf("app %s failed: %s", a.Name, orDash(a.Error))
			}
			if err == nil && !e.json {
				fmt.Fprintf(e.stderr, "hutch: app %s %s: %s (dev: %s)\n", a.Name, a.State, a.URL, a.DevURL)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&preset, "preset", "", "the `preset`: the app's starting files and processes (required)")
	fs.StringVar(&template, "template", "", "template `name` to use instead of the preset's image")
	fs.BoolVar(&public, "public", false, "serve the app to everyone, not only to the tenant's keys and sessions")
	fs.BoolVar(&wait, "wait", false, "wait until the app is ready or failed")
	return cmd
}

func newAppPresetsCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "presets",
		Short: "List the server's presets",
		Args:  nArgs(0, 0, "app presets takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			presets, err := c.Presets(cmd.Context())
			if err != nil {
				return err
			}
			return printList(e.stdout, e.json, presets, []string{"NAME", "TEMPLATE", "DESCRIPTION"}, func(p api.Preset) []string {
				return []string{p.Name, orDash(p.Template), orDash(p.Description)}
			})
		},
	}
}

func newAppListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List apps",
		Args:    nArgs(0, 0, "app ls takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.Apps(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			return printList(e.stdout, e.json, list.Apps, []string{"NAME", "ID", "STATE", "PRESET", "PUBLIC", "AGE", "URL"}, func(a api.App) []string {
				return []string{a.Name, a.ID, a.State, a.Preset, strconv.FormatBool(a.Public), formatAge(now, a.CreatedAt), a.URL}
			})
		},
	}
}

func newAppGetCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "get APP",
		Short: "Show an app",
		Args:  oneApp("get"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			a, err := findApp(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if e.json {
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
		},
	}
}

func newAppRemoveCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rm APP…",
		Short: "Delete apps, their sandboxes and history",
		Long:  "Deletes each app: its sandboxes, config, tasks and history.",
		Args:  nArgs(1, -1, "app rm takes one or more apps (ids or names)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return removeEach(e, "app rm", args, func(ref string) error {
				id, err := appID(ctx, c, ref)
				if err != nil {
					return err
				}
				return c.DeleteApp(ctx, id)
			})
		},
	}
}
