package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newSnapshotCmd is `hutch snapshot`: copies of sandboxes' files that
// outlive them, to restore or to start new sandboxes from
// (sandbox create --snapshot).
func newSnapshotCmd(e *env) *cobra.Command {
	return newGroup("snapshot", "Snapshot sandboxes' files; restore them", "",
		newSnapshotCreateCmd(e),
		newSnapshotListCmd(e),
		newSnapshotGetCmd(e),
		newSnapshotRemoveCmd(e),
		newSnapshotRestoreCmd(e),
	)
}

func newSnapshotCreateCmd(e *env) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "create ID",
		Short: "Snapshot a sandbox's files and print the snapshot's id",
		Long: "Copies the files of the sandbox (its own, over its template) into a new snapshot;\n" +
			"a running sandbox's processes are frozen while it is taken.",
		Args:              nArgs(1, 1, "snapshot create takes one sandbox id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			s, err := c.CreateSnapshot(cmd.Context(), args[0], api.CreateSnapshotRequest{Name: name})
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, s)
			}
			fmt.Fprintln(e.stdout, s.ID)
			fmt.Fprintf(e.stderr, "hutch: snapshot %s: %d %s, %s (processes paused %s)\n", s.ID, s.Files, plural(int(s.Files), "file", "files"),
				byteSize(s.Bytes), time.Duration(s.PauseMS)*time.Millisecond)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a `name` for the snapshot")
	return cmd
}

func newSnapshotListCmd(e *env) *cobra.Command {
	var sandbox string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List snapshots, newest first",
		Args:    nArgs(0, 0, "snapshot ls takes no arguments; use --sandbox ID for one sandbox's"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.ListSnapshots(cmd.Context(), sandbox)
			if err != nil {
				return err
			}
			now := time.Now()
			return printList(e.stdout, e.json, list.Snapshots, []string{"ID", "NAME", "SANDBOX", "TEMPLATE", "FILES", "SIZE", "AGE"}, func(s api.Snapshot) []string {
				return []string{s.ID, orDash(s.Name), s.SandboxID, s.Template, strconv.FormatInt(s.Files, 10), byteSize(s.Bytes), formatAge(now, s.CreatedAt)}
			})
		},
	}
	cmd.Flags().StringVar(&sandbox, "sandbox", "", "only the snapshots of the sandbox with this `id`")
	return cmd
}

func newSnapshotGetCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "get SNAPSHOT",
		Short: "Show a snapshot",
		Args:  nArgs(1, 1, "snapshot get takes one snapshot id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			s, err := c.GetSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, s)
			}
			now := time.Now()
			tw := newTable(e.stdout)
			row(tw, "id:", s.ID)
			row(tw, "name:", orDash(s.Name))
			row(tw, "sandbox:", s.SandboxID)
			row(tw, "template:", s.Template)
			row(tw, "driver:", s.Driver)
			row(tw, "files:", strconv.FormatInt(s.Files, 10)+" ("+byteSize(s.Bytes)+")")
			row(tw, "paused for:", (time.Duration(s.PauseMS) * time.Millisecond).String())
			row(tw, "created:", formatTime(now, &s.CreatedAt))
			return tw.Flush()
		},
	}
}

func newSnapshotRemoveCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rm SNAPSHOT…",
		Short: "Delete snapshots",
		Args:  nArgs(1, -1, "snapshot rm takes one or more snapshot ids"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			return removeEach(e, "snapshot rm", args, func(id string) error {
				return c.DeleteSnapshot(cmd.Context(), id)
			})
		},
	}
}

func newSnapshotRestoreCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "restore ID SNAPSHOT",
		Short:             "Give a running sandbox exactly a snapshot's files",
		Long:              "The sandbox's processes end, its files become the snapshot's, and it runs again.",
		Args:              nArgs(2, 2, "snapshot restore takes a sandbox id and a snapshot id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			sb, err := c.Restore(cmd.Context(), args[0], api.RestoreRequest{Snapshot: args[1]})
			if err != nil {
				return err
			}
			return printResult(e, sb, sb.ID)
		},
	}
}
