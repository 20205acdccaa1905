package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// newSandboxCmd is `hutch sandbox`, alias sb.
func newSandboxCmd(e *env) *cobra.Command {
	g := newGroup("sandbox", "Create, list and manage sandboxes", "",
		newSandboxCreateCmd(e),
		newListCmd(e, "ls", "List sandboxes"),
		newSandboxGetCmd(e),
		newRemoveCmd(e),
		newEachSandboxCmd(e, stopSandbox),
		newEachSandboxCmd(e, startSandbox),
		newEachSandboxCmd(e, pauseSandbox),
		newEachSandboxCmd(e, resumeSandbox),
		newExtendCmd(e),
		newKeepaliveCmd(e),
	)
	g.Aliases = []string{"sb"}
	return g
}

// newListCmd is `hutch sandbox ls`, and `hutch ls`.
func newListCmd(e *env, use, short string) *cobra.Command {
	var (
		state      string
		labels     kvFlag
		all, quiet bool
	)
	cmd := &cobra.Command{
		Use:     use + " [flags]",
		Aliases: []string{"list"},
		Short:   short,
		Long: short + ". Destroyed sandboxes are left out unless --all or --state asks\n" +
			"for them; stopped and paused ones are always listed.",
		Args: nArgs(0, 0, "ls takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			var list []api.Sandbox
			for sb, err := range c.AllSandboxes(cmd.Context(), client.ListOptions{State: api.SandboxState(state), Labels: labels.m}) {
				if err != nil {
					return err
				}
				if sb.State == api.StateDestroyed && !all && state == "" {
					continue
				}
				list = append(list, sb)
			}
			if quiet && !e.json {
				for _, sb := range list {
					fmt.Fprintln(e.stdout, sb.ID)
				}
				return nil
			}
			now := time.Now()
			return printList(e.stdout, e.json, list, []string{"ID", "STATE", "TEMPLATE", "DRIVER", "AGE", "LABELS"}, func(sb api.Sandbox) []string {
				return []string{sb.ID, string(sb.State), sb.Template, sb.Driver, formatAge(now, sb.CreatedAt), formatLabels(sb.Labels)}
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&state, "state", "", "only sandboxes in this `state` (creating, running, paused, stopped, failed, destroyed)")
	fs.Var(&labels, "label", "only sandboxes with this label (repeatable)")
	fs.BoolVarP(&all, "all", "a", false, "include destroyed sandboxes")
	fs.BoolVarP(&quiet, "quiet", "q", false, "print only the ids")
	return cmd
}

func newSandboxGetCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "get ID",
		Short:             "Show a sandbox",
		Args:              nArgs(1, 1, "sandbox get takes one sandbox id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			sb, err := c.GetSandbox(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, sb)
			}
			return printSandbox(e, sb)
		},
	}
}

// printSandbox shows one sandbox as a table of its fields.
func printSandbox(e *env, sb *api.Sandbox) error {
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

// newInspectCmd is `hutch inspect ID…`: each sandbox as the API shows it,
// in one JSON array, as docker inspect does.
func newInspectCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "inspect ID…",
		Short:             "Print sandboxes as a JSON array",
		Args:              nArgs(1, -1, "inspect takes one or more sandbox ids"),
		ValidArgsFunction: completeSandboxes(e, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			found := []*api.Sandbox{}
			err = eachID(e, "inspect", args, func(id string) error {
				sb, err := c.GetSandbox(cmd.Context(), id)
				if err == nil {
					found = append(found, sb)
				}
				return err
			})
			if perr := printJSON(e.stdout, found); err == nil {
				err = perr
			}
			return err
		},
	}
}
