package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newWatchCmd is `hutch watch ID [PATH]`: the changes under a directory
// of a sandbox (its working directory by default), one line per change,
// until interrupted or the directory is removed; under --json, one line
// of the API's watch event per change.
func newWatchCmd(e *env) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:               "watch [--recursive=false] ID [PATH]",
		Short:             "Print changes under a sandbox's directory as they happen",
		Args:              nArgs(1, 2, "watch takes a sandbox id and an optional directory"),
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
			ctx := cmd.Context()
			w, err := c.WatchFiles(ctx, args[0], dir, recursive)
			if err != nil {
				return err
			}
			defer w.Close()
			for {
				ev, err := w.Next()
				if errors.Is(err, io.EOF) {
					fmt.Fprintf(e.stderr, "hutch: %s was removed; the watch is over\n", dir)
					return nil
				}
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return fmt.Errorf("the watch broke: %w", err)
				}
				if e.json {
					err = printJSONLine(e.stdout, ev)
				} else {
					_, err = fmt.Fprintln(e.stdout, formatWatchEvent(ev))
				}
				if err != nil {
					return err
				}
			}
		},
	}
	cmd.Flags().BoolVar(&recursive, "recursive", true, "watch the directories below PATH too (false: PATH itself only)")
	return cmd
}

// formatWatchEvent is one change as a line: its type and path (a
// directory's with a trailing slash), a rename's as OLD -> NEW.
func formatWatchEvent(ev api.WatchEvent) string {
	p := func(s string) string {
		s = quoteIfOdd(s)
		if ev.IsDir && s != "." {
			s += "/"
		}
		return s
	}
	switch {
	case ev.Type == api.WatchOverflow && ev.Path == "":
		return "overflow  (changes were lost; rescan)"
	case ev.Type == api.WatchOverflow:
		return "overflow  " + p(ev.Path) + "  (not watched: the watch limit is reached)"
	case ev.Type == api.WatchRename:
		return fmt.Sprintf("%-8s  %s -> %s", ev.Type, p(ev.OldPath), p(ev.Path))
	}
	return fmt.Sprintf("%-8s  %s", ev.Type, p(ev.Path))
}

// quoteIfOdd quotes a path that holds anything that would break or hide
// in a line: control characters, invalid UTF-8, leading or trailing
// spaces.
func quoteIfOdd(s string) string {
	if !utf8.ValidString(s) || (s != "" && (s[0] == ' ' || s[len(s)-1] == ' ' || s[0] == '"')) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
