package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// newPortCmd is `hutch port ls|url|public|private`: the previews of a
// sandbox's ports, http(s)://PORT-ID.<preview domain>/.
func newPortCmd(e *env) *cobra.Command {
	return newGroup("port", "Preview a sandbox's ports: list them, sign URLs, make them public",
		"A sandbox's port PORT is served at http(s)://PORT-ID.<preview domain>/. A port is\n"+
			"private until made public: a private one lets in the tenant's API keys or a\n"+
			"signed URL (hutch port url).",
		newPortListCmd(e),
		newPortURLCmd(e),
		newPortPublicCmd(e, "public", true, "Let everyone reach a port's preview without credentials"),
		newPortPublicCmd(e, "private", false, "Make a port's preview private again"),
	)
}

func newPortListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "ls ID",
		Aliases:           []string{"list"},
		Short:             "List the ports with a setting and those listening",
		Args:              nArgs(1, 1, "port ls takes one sandbox id"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.ListPorts(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, list)
			}
			if list.ListeningError != nil {
				fmt.Fprintf(e.stderr, "hutch: which ports listen is unknown: %s (%s)\n", list.ListeningError.Message, list.ListeningError.Code)
			}
			return printList(e.stdout, false, list.Ports, []string{"PORT", "ACCESS", "LISTENING", "URL"}, func(p api.Port) []string {
				access := "private"
				if p.Public {
					access = "public"
				}
				listening := "-"
				if p.Listening != nil {
					listening = strconv.FormatBool(*p.Listening)
				}
				return []string{strconv.Itoa(p.Port), access, listening, p.URL}
			})
		},
	}
}

func newPortURLCmd(e *env) *cobra.Command {
	var ttl durationFlag
	cmd := &cobra.Command{
		Use:   "url [--ttl DURATION] ID PORT",
		Short: "Print a signed URL of a port's preview",
		Long: "Prints a URL of the port's preview that lets whoever has it in, with no key,\n" +
			"until it expires (--ttl: an hour by default, at most a day) or the key that\n" +
			"signed it is revoked, public or not.",
		Args:              nArgs(2, 2, "port url takes a sandbox id and a port"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			port, err := parsePort(args[1])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			u, err := c.PreviewURL(cmd.Context(), args[0], port, time.Duration(ttl))
			if err != nil {
				return err
			}
			if e.json {
				return printJSON(e.stdout, u)
			}
			fmt.Fprintln(e.stdout, u.URL)
			fmt.Fprintf(e.stderr, "hutch: the URL lets its holder in until %s\n", u.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().Var(&ttl, "ttl", "how long the URL lets its holder in (0: an hour)")
	return cmd
}

// newPortPublicCmd is `hutch port public|private ID PORT`; it prints the
// preview's URL.
func newPortPublicCmd(e *env, name string, public bool, short string) *cobra.Command {
	return &cobra.Command{
		Use:               name + " ID PORT",
		Short:             short,
		Args:              nArgs(2, 2, "port "+name+" takes a sandbox id and a port"),
		ValidArgsFunction: completeSandboxes(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			port, err := parsePort(args[1])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			p, err := c.SetPortPublic(cmd.Context(), args[0], port, public)
			if err != nil {
				return err
			}
			return printResult(e, p, p.URL)
		},
	}
}

// parsePort reads a port argument.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, usagef("%q is not a port (1 to 65535)", s)
	}
	return n, nil
}
