package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
)

const rootLong = `hutch runs AI agents' code, and the apps they build, in sandboxes.
'hutch serve' runs the platform; every other command talks to a server.

Environment:
  HUTCH_URL       the server's URL (default ` + defaultURL + `)
  HUTCH_API_KEY   the API key; when unset, the admin key a local server wrote,
                  $HUTCH_DATA/admin.key or ./` + defaultDataDir + `/admin.key

Output:
  With --json a command prints what the API answers, as JSON on stdout: an
  object, a list as a JSON array, a stream as one object a line. Errors then
  go to stderr as the API's error envelope, {"error":{"code":…,"message":…}},
  with the API's code or one of the CLI's own: usage, local (this machine's
  side, such as a file), unreachable, interrupted, error.

Durations:
  Every duration is written as 90s, 30m, 2h or 1h30m; a bare number is seconds.

Exit status:
  0 done, 1 failed, 2 a usage error, 130 interrupted; exec, run, shell,
  attach and logs -f exit with the remote command's status.`

// groupAnnotation marks a command that only groups others: its help
// shows no usage line of its own.
const groupAnnotation = "hutch.group"

// Command groups of the top-level help.
const (
	groupSandboxes = "sandboxes"
	groupProcesses = "processes"
	groupFiles     = "files"
	groupPlatform  = "platform"
)

// newRoot builds the command tree for one run: every command reads and
// writes through e, and --json sets e.json.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "hutch",
		Short:         "Self-hosted sandboxes for AI agents",
		Long:          rootLong,
		Version:       hutchVersion(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          groupArgs,
		RunE:          groupRun,
		Annotations:   map[string]string{groupAnnotation: "true"},
		// Did you mean: `hutch sandbx` suggests sandbox.
		SuggestionsMinimumDistance: 2,
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}",
		`{{if and .Runnable (not (index .Annotations "`+groupAnnotation+`"))}}`, 1))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%s", err) })
	root.PersistentFlags().BoolVar(&e.json, "json", false, "print results as the API's JSON on stdout, errors as JSON on stderr")
	root.AddGroup(
		&cobra.Group{ID: groupSandboxes, Title: "Sandboxes:"},
		&cobra.Group{ID: groupProcesses, Title: "Commands and processes:"},
		&cobra.Group{ID: groupFiles, Title: "Files:"},
		&cobra.Group{ID: groupPlatform, Title: "Apps and the platform:"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupSandboxes,
		newSandboxCmd(e),
		newListCmd(e, "ls", "List sandboxes (sandbox ls)"),
		newRemoveCmd(e),
		newInspectCmd(e),
		newEachSandboxCmd(e, pauseSandbox),
		newEachSandboxCmd(e, resumeSandbox),
		newExtendCmd(e),
		newForkCmd(e),
		newSnapshotCmd(e),
		newStatsCmd(e),
		newNetworkCmd(e),
		newPortCmd(e),
	)
	add(groupProcesses,
		newExecCmd(e),
		newRunCmd(e),
		newShellCmd(e),
		newAttachCmd(e),
		newStartCmd(e),
		newPsCmd(e),
		newLogsCmd(e),
		newKillCmd(e),
	)
	add(groupFiles,
		newCpCmd(e),
		newFsCmd(e),
		newWatchCmd(e),
	)
	add(groupPlatform,
		newAppCmd(e),
		newTemplateCmd(e),
		newKeyCmd(e),
		newSecretCmd(e),
		newTenantCmd(e),
		newSettingsCmd(e),
		newNodeCmd(e),
		newEventsCmd(e),
		newInfoCmd(e),
		newServeCmd(),
		newStoreCmd(e),
		newVersionCmd(e),
	)
	return root
}

// newGroup returns a command that only groups others: `hutch sandbox`.
// Run alone, or with a word that is none of its commands, it is a usage
// error that suggests the nearest command.
func newGroup(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use:                        use,
		Short:                      short,
		Long:                       long,
		Args:                       groupArgs,
		RunE:                       groupRun,
		Annotations:                map[string]string{groupAnnotation: "true"},
		SuggestionsMinimumDistance: 2,
	}
	g.AddCommand(subs...)
	return g
}

// groupArgs lets a group's RunE say what is wrong with its arguments.
func groupArgs(*cobra.Command, []string) error { return nil }

// groupRun runs when a group is given no command, or an unknown one.
func groupRun(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0 && !cmd.HasParent():
		return usagef("no command given")
	case len(args) == 0:
		return usagef("%s needs a command: %s", cmd.CommandPath(), strings.Join(commandNames(cmd), ", "))
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s", msg)
}

// commandNames lists the commands of a group that help shows.
func commandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// nArgs accepts from least to most positional arguments (most < 0: any
// number); otherwise it is the usage error msg.
func nArgs(least, most int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < least || (most >= 0 && len(args) > most) {
			return usagef("%s", msg)
		}
		return nil
	}
}

// versionLine is what `hutch --version` and `hutch version` print.
func versionLine() string {
	return fmt.Sprintf("hutch %s (%s, %s/%s)", hutchVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
