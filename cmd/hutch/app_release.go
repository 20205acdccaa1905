package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// The live side of an app: promote, rollback, and what runs.

func newAppPromoteCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "promote APP",
		Short: "Make what dev runs live, once its checks pass",
		Long: "Checks dev, copies it, checks the copy as live, snapshots live, then points live at\n" +
			"the copy. A failed check leaves live as it was. The old live stays for rollback.",
		Args: oneApp("promote"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			res, err := c.Promote(cmd.Context(), id)
			if err != nil {
				return err
			}
			if e.json {
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
		},
	}
}

func newAppRollbackCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rollback APP",
		Short: "Point live back at what it was before the last promotion",
		Long: "Points live back at the sandbox it was before the last promotion; a second\n" +
			"rollback undoes the first.",
		Args: oneApp("rollback"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			a, err := c.Rollback(cmd.Context(), id)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, a)
			}
			fmt.Fprintln(e.stdout, a.Live)
			fmt.Fprintf(e.stderr, "hutch: app %s rolled back: live is %s again (previous live %s)\n", a.Name, a.Live, orDash(a.PreviousLive))
			return nil
		},
	}
}

func newAppPsCmd(e *env) *cobra.Command {
	var role string
	cmd := &cobra.Command{
		Use:   "ps [--role dev|live] APP",
		Short: "List the processes of dev (--role live: of live)",
		Args:  oneApp("ps"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := appClient(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			ps, err := c.AppProcesses(cmd.Context(), id, role)
			if err != nil {
				return err
			}
			if e.json {
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
		},
	}
	cmd.Flags().StringVar(&role, "role", api.RoleDev, "whose processes: `dev` or live")
	return cmd
}
