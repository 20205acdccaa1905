package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newFsCmd is `hutch fs ls|cat|rm|mv|mkdir ID PATH…`: a sandbox's files
// one call at a time (hutch cp copies them in and out). A relative PATH is
// under the sandbox's working directory.
func newFsCmd(e *env) *cobra.Command {
	return newGroup("fs", "List, read, remove, move and make a sandbox's files",
		"A sandbox's files, one call at a time; hutch cp copies them in and out.\n"+
			"A relative PATH is under the sandbox's working directory.",
		newFsListCmd(e), newFsCatCmd(e), newFsRemoveCmd(e), newFsMoveCmd(e), newFsMkdirCmd(e))
}

func newFsListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "ls ID [PATH]",
		Aliases:           []string{"list"},
		Short:             "List a directory",
		Args:              nArgs(1, 2, "fs ls takes a sandbox id and an optional directory"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 2 {
				dir = args[1]
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.ListFiles(cmd.Context(), args[0], dir)
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, list)
			}
			now := time.Now()
			return printList(e.stdout, false, list.Entries, []string{"MODE", "SIZE", "MODIFIED", "NAME"}, func(f api.FileInfo) []string {
				name := quoteIfOdd(f.Name)
				switch {
				case f.Type == "dir":
					name += "/"
				case f.LinkTarget != "":
					name += " -> " + quoteIfOdd(f.LinkTarget)
				}
				return []string{f.Mode, formatBytes(f.Size), formatAge(now, f.ModTime) + " ago", name}
			})
		},
	}
}

func newFsCatCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "cat ID PATH…",
		Short:             "Print files (their bytes, whatever --json says)",
		Args:              nArgs(2, -1, "fs cat takes a sandbox id and one or more files"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			for _, p := range args[1:] {
				rc, err := c.ReadFile(cmd.Context(), args[0], p)
				if err != nil {
					return err
				}
				_, err = io.Copy(localWriter{e.stdout}, rc)
				rc.Close()
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func newFsRemoveCmd(e *env) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:               "rm [-r] ID PATH…",
		Short:             "Remove files (-r: directories and what they hold)",
		Args:              nArgs(2, -1, "fs rm takes a sandbox id and one or more paths"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			return removeEach(e, "fs rm", args[1:], func(p string) error {
				return c.RemoveFile(cmd.Context(), args[0], p, recursive)
			})
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove directories and what they hold")
	return cmd
}

func newFsMoveCmd(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:               "mv [-f] ID FROM TO",
		Short:             "Move or rename a file or directory",
		Args:              nArgs(3, 3, "fs mv takes a sandbox id, a path and its new path"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			fi, err := c.Move(cmd.Context(), args[0], api.MoveRequest{From: args[1], To: args[2], Overwrite: force})
			if err != nil {
				return err
			}
			return printResult(e, fi, fi.Path)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "replace what TO names")
	return cmd
}

func newFsMkdirCmd(e *env) *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:               "mkdir [--mode M] ID PATH…",
		Short:             "Make directories, and their parents as needed",
		Args:              nArgs(2, -1, "fs mkdir takes a sandbox id and one or more paths"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			made := []*api.FileInfo{}
			err = eachID(e, "fs mkdir", args[1:], func(p string) error {
				fi, err := c.Mkdir(cmd.Context(), args[0], api.MkdirRequest{Path: p, Mode: mode})
				if err != nil {
					return err
				}
				made = append(made, fi)
				if !e.json {
					fmt.Fprintln(e.stdout, fi.Path)
				}
				return nil
			})
			return printDone(e, made, err)
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "", "permissions in octal, such as `0750` (default: the server's)")
	return cmd
}
