package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// sandboxAction is a change of state done to each sandbox named.
type sandboxAction struct {
	name, short string
	do          func(*client.Client, context.Context, string) (*api.Sandbox, error)
}

var (
	stopSandbox = sandboxAction{"stop", "Stop sandboxes, keeping their files",
		(*client.Client).StopSandbox}
	startSandbox = sandboxAction{"start", "Start stopped sandboxes",
		(*client.Client).StartSandbox}
	pauseSandbox = sandboxAction{"pause", "Pause sandboxes, keeping their memory",
		(*client.Client).PauseSandbox}
	resumeSandbox = sandboxAction{"resume", "Resume paused sandboxes",
		(*client.Client).ResumeSandbox}
)

// newEachSandboxCmd is `hutch sandbox stop|start|pause|resume ID…`: it
// prints each id done (under --json, the sandboxes as they are after).
func newEachSandboxCmd(e *env, a sandboxAction) *cobra.Command {
	return &cobra.Command{
		Use:               a.name + " ID…",
		Short:             a.short,
		Args:              nArgs(1, -1, a.name+" takes one or more sandbox ids"),
		ValidArgsFunction: completeSandboxes(e, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			done := []*api.Sandbox{}
			err = eachID(e, "sandbox "+a.name, args, func(id string) error {
				sb, err := a.do(c, cmd.Context(), id)
				if err != nil {
					return err
				}
				done = append(done, sb)
				if !e.json {
					fmt.Fprintln(e.stdout, id)
				}
				return nil
			})
			return printDone(e, done, err)
		},
	}
}

// newRemoveCmd is `hutch rm ID…|--all` and `hutch sandbox rm`: destroy
// sandboxes, printing each id destroyed (under --json, a JSON array of
// them).
func newRemoveCmd(e *env) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:               "rm ID…|--all",
		Short:             "Destroy sandboxes",
		Long:              "Destroys the sandboxes named, or with --all every sandbox of the key's tenant\nthat is not destroyed already.",
		ValidArgsFunction: completeSandboxes(e, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usagef("rm takes one or more sandbox ids, or --all")
			}
			ctx := cmd.Context()
			c, err := e.client()
			if err != nil {
				return err
			}
			if all {
				if args, err = sandboxIDs(ctx, c); err != nil {
					return err
				}
			}
			return removeEach(e, "sandbox rm", args, func(id string) error {
				return c.DeleteSandbox(ctx, id)
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "destroy every sandbox of the key's tenant")
	return cmd
}

// sandboxIDs lists the ids of the caller's sandboxes that are not
// destroyed.
func sandboxIDs(ctx context.Context, c *client.Client) ([]string, error) {
	var ids []string
	for sb, err := range c.AllSandboxes(ctx, client.ListOptions{}) {
		if err != nil {
			return nil, err
		}
		if sb.State != api.StateDestroyed {
			ids = append(ids, sb.ID)
		}
	}
	return ids, nil
}

// idAndDuration reads the ID DURATION arguments of a command, a duration
// of at least least.
func idAndDuration(args []string, least time.Duration) (string, time.Duration, error) {
	d, err := parseDuration(args[1])
	if err != nil || d < least {
		return "", 0, usagef("duration %q: give %s or more, such as 90s, 30m or 2h", args[1], least)
	}
	return args[0], d, nil
}

// newExtendCmd is `hutch extend ID DURATION`, also `hutch sandbox extend`.
func newExtendCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "extend ID DURATION",
		Short: "Give a sandbox a new lifetime from now",
		Long: "Gives the sandbox a lifetime of DURATION (90s, 30m, 2h) from now, or from its next\n" +
			"start when it is stopped (a stopped sandbox's clock does not run).",
		Args:              nArgs(2, 2, "extend takes a sandbox id and a duration"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, d, err := idAndDuration(args, time.Second)
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			sb, err := c.SetTimeout(cmd.Context(), id, durationFlag(d).seconds())
			switch {
			case err != nil:
				return err
			case e.json:
				return printJSON(e.stdout, sb)
			case sb.ExpiresAt != nil:
				fmt.Fprintf(e.stdout, "%s expires at %s\n", sb.ID, sb.ExpiresAt.Local().Format(time.RFC3339))
			default:
				fmt.Fprintf(e.stdout, "%s has %ds from its next start\n", sb.ID, sb.TimeoutS)
			}
			return nil
		},
	}
}

// newKeepaliveCmd is `hutch sandbox keepalive ID DURATION`.
func newKeepaliveCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "keepalive ID DURATION",
		Short: "Keep the idle action off a sandbox for a while",
		Long: "Keeps the idle action (pause, stop or destroy) off the sandbox for DURATION\n" +
			"(90s, 30m, 2h) from now; 0 ends a keepalive. Its timeout still runs.",
		Args:              nArgs(2, 2, "keepalive takes a sandbox id and a duration"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, d, err := idAndDuration(args, 0)
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			sb, err := c.Keepalive(cmd.Context(), id, durationFlag(d).seconds())
			switch {
			case err != nil:
				return err
			case e.json:
				return printJSON(e.stdout, sb)
			case sb.KeepaliveUntil != nil:
				fmt.Fprintf(e.stdout, "%s kept alive until %s\n", sb.ID, sb.KeepaliveUntil.Local().Format(time.RFC3339))
			default:
				fmt.Fprintf(e.stdout, "%s has no keepalive\n", sb.ID)
			}
			return nil
		},
	}
}
